import Foundation

/// Why bytes are not one CBOR item this side accepts.
public struct CBORError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, in a few words.
    public var reason: String
    /// The offset of the byte where it was found.
    public var offset: Int

    /// An error at `offset`.
    public init(_ reason: String, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "malformed CBOR at byte \(offset): \(reason)" }
}

/// Decodes one CBOR item from outside input, within limits that keep a hostile peer from costing
/// more than the bytes it sent: nesting depth, the number of items, and lengths that must fit in
/// what is left of the input (checked before anything is allocated).
///
/// Definite and indefinite lengths are both accepted (Zephyr's encoder writes indefinite-length
/// maps), as are non-preferred heads; reserved additional-information values, a break outside
/// an indefinite item, invalid UTF-8 and trailing bytes are refused.
public struct CBORDecoder: Sendable {
    /// The deepest nesting of arrays, maps and tags accepted.
    public var maximumDepth: Int
    /// The most data items accepted in one input.
    public var maximumItems: Int

    /// A decoder with limits; SMP payloads nest 3 deep and hold tens of items.
    public init(maximumDepth: Int = 16, maximumItems: Int = 4096) {
        self.maximumDepth = maximumDepth
        self.maximumItems = maximumItems
    }

    /// The one item that `data` holds, all of it.
    public func decode(_ data: Data) throws(CBORError) -> CBOR {
        var cursor = Cursor(bytes: [UInt8](data), limits: self)
        let item = try cursor.item(depth: 0)
        guard cursor.position == cursor.bytes.count else {
            throw CBORError("\(cursor.bytes.count - cursor.position) bytes after the item", at: cursor.position)
        }
        return item
    }

    private struct Cursor {
        let bytes: [UInt8]
        let limits: CBORDecoder
        var position = 0
        var items = 0

        /// A marker for the break byte (0xFF) inside indefinite-length items.
        enum Next {
            case item(CBOR)
            case breakCode
        }

        mutating func item(depth: Int) throws(CBORError) -> CBOR {
            switch try next(depth: depth) {
            case .item(let item): return item
            case .breakCode: throw CBORError("break outside an indefinite-length item", at: position - 1)
            }
        }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard position < bytes.count else { throw CBORError("input ends inside an item", at: position) }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func bigEndian(_ count: Int) throws(CBORError) -> UInt64 {
            guard bytes.count - position >= count else { throw CBORError("input ends inside an item", at: position) }
            var value: UInt64 = 0
            for index in 0..<count { value = value << 8 | UInt64(bytes[position + index]) }
            position += count
            return value
        }

        /// The argument of a head whose additional information is `info`; `nil` for 31
        /// (indefinite length).
        mutating func argument(_ info: UInt8, at start: Int) throws(CBORError) -> UInt64? {
            switch info {
            case 0..<24: return UInt64(info)
            case 24: return try bigEndian(1)
            case 25: return try bigEndian(2)
            case 26: return try bigEndian(4)
            case 27: return try bigEndian(8)
            case 31: return nil
            default: throw CBORError("reserved additional information \(info)", at: start)
            }
        }

        /// A length that must fit in the input: each counted thing takes at least `unit` bytes.
        func length(_ value: UInt64, unit: Int, at start: Int) throws(CBORError) -> Int {
            let left = UInt64(bytes.count - position)
            guard value <= left / UInt64(unit) else {
                throw CBORError("a length of \(value) is more than the \(left) bytes left", at: start)
            }
            return Int(value)
        }

        mutating func count() throws(CBORError) {
            items += 1
            guard items <= limits.maximumItems else {
                throw CBORError("more than \(limits.maximumItems) items", at: position)
            }
        }

        mutating func next(depth: Int) throws(CBORError) -> Next {
            let start = position
            let initial = try byte()
            if initial == 0xFF { return .breakCode }
            try count()
            let major = initial >> 5
            let info = initial & 0x1F
            switch major {
            case 0, 1:
                guard let value = try argument(info, at: start) else { throw CBORError("an integer cannot be indefinite", at: start) }
                return .item(major == 0 ? .unsigned(value) : .negative(value))
            case 2, 3:
                let content = try string(info, major: major, at: start)
                if major == 2 { return .item(.bytes(Data(content))) }
                guard let text = String(validating: content, as: UTF8.self) else { throw CBORError("a text string is not UTF-8", at: start) }
                return .item(.text(text))
            case 4, 5:
                guard depth < limits.maximumDepth else { throw CBORError("nested deeper than \(limits.maximumDepth)", at: start) }
                let definite = try argument(info, at: start)
                let unit = major == 4 ? 1 : 2
                let expected = try definite.map { (value) throws(CBORError) in try length(value, unit: unit, at: start) }
                var array: [CBOR] = []
                var entries: [CBOR.Entry] = []
                var index = 0
                while expected.map({ index < $0 }) ?? true {
                    let keyOrItem: CBOR
                    switch try next(depth: depth + 1) {
                    case .item(let item): keyOrItem = item
                    case .breakCode:
                        guard expected == nil else { throw CBORError("break inside a definite-length item", at: position - 1) }
                        return .item(major == 4 ? .array(array) : .map(entries))
                    }
                    if major == 4 {
                        array.append(keyOrItem)
                    } else {
                        entries.append(CBOR.Entry(keyOrItem, try item(depth: depth + 1)))
                    }
                    index += 1
                }
                return .item(major == 4 ? .array(array) : .map(entries))
            case 6:
                guard depth < limits.maximumDepth else { throw CBORError("nested deeper than \(limits.maximumDepth)", at: start) }
                guard let tag = try argument(info, at: start) else { throw CBORError("a tag cannot be indefinite", at: start) }
                return .item(.tagged(tag, try item(depth: depth + 1)))
            default:
                return .item(try simple(info, at: start))
            }
        }

        /// A byte or text string's content, joining the chunks of an indefinite-length one.
        mutating func string(_ info: UInt8, major: UInt8, at start: Int) throws(CBORError) -> [UInt8] {
            if let value = try argument(info, at: start) {
                let count = try length(value, unit: 1, at: start)
                defer { position += count }
                return Array(bytes[position..<position + count])
            }
            var content: [UInt8] = []
            while true {
                let chunkStart = position
                let chunk = try byte()
                if chunk == 0xFF { return content }
                guard chunk >> 5 == major, chunk & 0x1F != 31 else {
                    throw CBORError("an indefinite-length string holds something other than definite chunks of its type", at: chunkStart)
                }
                try count()
                content += try string(chunk & 0x1F, major: major, at: chunkStart)
            }
        }

        mutating func simple(_ info: UInt8, at start: Int) throws(CBORError) -> CBOR {
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 25: return .float(Double(Float16Bits(UInt16(try bigEndian(2))).value))
            case 26: return .float(Double(Float(bitPattern: UInt32(try bigEndian(4)))))
            case 27: return .float(Double(bitPattern: try bigEndian(8)))
            case 24:
                let value = try byte()
                guard value >= 32 else { throw CBORError("simple value \(value) in two bytes", at: start) }
                throw CBORError("unassigned simple value \(value)", at: start)
            default: throw CBORError("unassigned simple value \(info)", at: start)
            }
        }
    }
}

/// IEEE 754 half precision, decoded by hand (`Float16` is not available on every platform).
private struct Float16Bits {
    let bits: UInt16
    init(_ bits: UInt16) { self.bits = bits }

    var value: Float {
        let sign: Float = bits & 0x8000 == 0 ? 1 : -1
        let exponent = Int(bits >> 10 & 0x1F)
        let mantissa = Float(bits & 0x3FF)
        switch exponent {
        case 0: return sign * mantissa * Float(sign: .plus, exponent: -24, significand: 1)
        case 31: return mantissa == 0 ? sign * .infinity : .nan
        default: return sign * (1 + mantissa / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}
