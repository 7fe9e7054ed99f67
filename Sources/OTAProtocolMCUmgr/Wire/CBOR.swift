import Foundation

/// A CBOR data item (RFC 8949), as much of it as SMP uses: integers, byte and text strings,
/// arrays, maps, booleans, null and floats.
///
/// SMP payloads are one CBOR map with text keys. Maps keep their entries in wire order (a
/// server may send keys in any order, and a client compares requests byte for byte in tests).
public indirect enum CBOR: Sendable, Hashable {
    /// A non-negative integer (major type 0).
    case unsigned(UInt64)
    /// A negative integer, `-1 - n` (major type 1).
    case negative(UInt64)
    /// A byte string (major type 2).
    case bytes(Data)
    /// A UTF-8 text string (major type 3).
    case text(String)
    /// An array (major type 4).
    case array([CBOR])
    /// A map (major type 5), entries in wire order.
    case map([Entry])
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null
    /// `undefined`.
    case undefined
    /// A half-, single- or double-precision float, kept as a `Double`.
    case float(Double)
    /// A tagged item (major type 6): the tag is kept, the content decoded.
    case tagged(UInt64, CBOR)

    /// One key and value of a map.
    public struct Entry: Sendable, Hashable {
        /// The key.
        public var key: CBOR
        /// The value.
        public var value: CBOR

        /// An entry.
        public init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    /// An integer, as unsigned or negative.
    public static func integer(_ value: Int) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// A map with text keys, in the given order.
    public static func textMap(_ entries: KeyValuePairs<String, CBOR>) -> CBOR {
        .map(entries.map { Entry(.text($0.key), $0.value) })
    }
}

// MARK: - Reading values

extension CBOR {
    /// The value under a text key of a map (the first, if a hostile peer repeats it), or `nil`.
    public subscript(key: String) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        for entry in entries {
            // Compared in place: `.text(key)` would box a new item per entry.
            if case .text(let text) = entry.key, text == key { return entry.value }
        }
        return nil
    }

    /// An unsigned integer's value.
    public var unsignedValue: UInt64? {
        if case .unsigned(let value) = self { return value }
        return nil
    }

    /// An integer's value, when it fits in `Int`.
    public var intValue: Int? {
        switch self {
        case .unsigned(let value): return value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): return value <= UInt64(Int.max) ? -1 - Int(value) : nil
        default: return nil
        }
    }

    /// A byte string's bytes.
    public var bytesValue: Data? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    /// A text string's text.
    public var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// A boolean's value.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// An array's items.
    public var arrayValue: [CBOR]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// A map's entries.
    public var mapEntries: [Entry]? {
        if case .map(let value) = self { return value }
        return nil
    }
}

// MARK: - Encoding

extension CBOR {
    /// The item in CBOR's preferred serialisation: shortest heads, definite lengths.
    public var encoded: Data {
        var out = Data()
        out.reserveCapacity(encodedLength)
        encode(into: &out)
        return out
    }

    /// The length of ``encoded`` in bytes, computed without encoding (an upload request is sized
    /// to its frame before its data is cut).
    public var encodedLength: Int {
        switch self {
        case .unsigned(let value), .negative(let value): Self.headLength(value)
        case .bytes(let value): Self.headLength(UInt64(value.count)) + value.count
        case .text(let value): Self.headLength(UInt64(value.utf8.count)) + value.utf8.count
        case .array(let items): items.reduce(Self.headLength(UInt64(items.count))) { $0 + $1.encodedLength }
        case .map(let entries): entries.reduce(Self.headLength(UInt64(entries.count))) { $0 + $1.key.encodedLength + $1.value.encodedLength }
        case .tagged(let tag, let item): Self.headLength(tag) + item.encodedLength
        case .bool, .null, .undefined: 1
        case .float: 9
        }
    }

    /// Appends the item's encoding to `out`.
    public func encode(into out: inout Data) {
        switch self {
        case .unsigned(let value): Self.head(0, value, into: &out)
        case .negative(let value): Self.head(1, value, into: &out)
        case .bytes(let value):
            Self.head(2, UInt64(value.count), into: &out)
            out.append(value)
        case .text(let value):
            var text = value
            text.withUTF8 { utf8 in
                Self.head(3, UInt64(utf8.count), into: &out)
                out.append(utf8)
            }
        case .array(let items):
            Self.head(4, UInt64(items.count), into: &out)
            for item in items { item.encode(into: &out) }
        case .map(let entries):
            Self.head(5, UInt64(entries.count), into: &out)
            for entry in entries {
                entry.key.encode(into: &out)
                entry.value.encode(into: &out)
            }
        case .tagged(let tag, let item):
            Self.head(6, tag, into: &out)
            item.encode(into: &out)
        case .bool(let value): out.append(value ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .float(let value):
            out.append(0xFB)
            let bits = value.bitPattern
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
    }

    /// The length of `head(major, value)` in bytes: 1, 2, 3, 5 or 9.
    public static func headLength(_ value: UInt64) -> Int {
        switch value {
        case 0..<24: 1
        case 24...0xFF: 2
        case 0x100...0xFFFF: 3
        case 0x1_0000...0xFFFF_FFFF: 5
        default: 9
        }
    }

    private static func head(_ major: UInt8, _ value: UInt64, into out: inout Data) {
        // The head's bytes from one big-endian word, appended at once (no array per head).
        let length = headLength(value)
        let type = major << 5
        let first: UInt8 =
            switch length {
            case 1: type | UInt8(value)
            case 2: type | 24
            case 3: type | 25
            case 5: type | 26
            default: type | 27
            }
        out.append(first)
        guard length > 1 else { return }
        withUnsafeBytes(of: value.bigEndian) { word in
            out.append(word.baseAddress!.assumingMemoryBound(to: UInt8.self).advanced(by: 9 - length), count: length - 1)
        }
    }
}
