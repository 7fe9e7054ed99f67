#if os(Linux)
/// A D-Bus value of any type: what a message's arguments are made of.
///
/// Containers carry their element types, so empty arrays and dictionaries keep their signature:
///
/// ```swift
/// let options: DBusValue = .dictionary(key: .string, value: .variant, entries: [])   // a{sv}, empty
/// let chunk: DBusValue = .bytes(data)                                                 // ay
/// let props = ["UUID": DBusValue.string(uuid), "Primary": .bool(true)].dbusValue     // a{sv}
/// ```
///
/// Read values back with the optional accessors (``string``, ``bytes``, ``variantDictionary``…) or,
/// with a type check that throws, through ``DBusValueConvertible`` and ``DBusMessage/decode(_:)``.
/// Decoding preserves everything exactly: `decode(encode(v)) == v` for every value.
enum DBusValue: Hashable, Sendable {
    /// `y`
    case byte(UInt8)
    /// `b`
    case bool(Bool)
    /// `n`
    case int16(Int16)
    /// `q`
    case uint16(UInt16)
    /// `i`
    case int32(Int32)
    /// `u`
    case uint32(UInt32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `s`; must not contain NUL characters.
    case string(String)
    /// `o`
    case objectPath(DBusObjectPath)
    /// `g`; must be a valid signature.
    case signature(String)
    /// `h`, an owned file descriptor.
    case unixFD(DBusFileDescriptor)
    /// `aT`: elements that all have the type `element`.
    case array(element: DBusType, [DBusValue])
    /// `a{KV}`: entries whose keys have the basic type `key` and values the type `value`.
    case dictionary(key: DBusType, value: DBusType, entries: [Entry])
    /// `(…)`: one or more fields.
    case structure([DBusValue])
    /// `v`: a value with its own type.
    indirect case variant(DBusValue)

    /// One entry of a ``dictionary(key:value:entries:)``.
    struct Entry: Hashable, Sendable {
        /// The key, of a basic type.
        var key: DBusValue
        /// The value.
        var value: DBusValue

        /// Creates an entry.
        init(key: DBusValue, value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value's type, from which its signature follows.
    var type: DBusType {
        switch self {
        case .byte: .byte
        case .bool: .bool
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }

    /// An `ay` array holding `bytes`.
    static func bytes(_ bytes: some Sequence<UInt8>) -> DBusValue {
        .array(element: .byte, bytes.map(DBusValue.byte))
    }

    /// An `as` array holding `strings`.
    static func strings(_ strings: some Sequence<String>) -> DBusValue {
        .array(element: .string, strings.map(DBusValue.string))
    }

    /// An `a{sv}` dictionary (properties, options) holding `dictionary`, sorted by key, each
    /// value wrapped in a variant.
    static func variantDictionary(_ dictionary: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: .string,
            value: .variant,
            entries: dictionary.sorted { $0.key < $1.key }.map {
                Entry(key: .string($0.key), value: .variant($0.value))
            }
        )
    }
}

// MARK: - Reading values

extension DBusValue {
    /// The value of a `b`, otherwise `nil`.
    var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    /// The value of a `y`, otherwise `nil`.
    var byte: UInt8? { if case .byte(let value) = self { value } else { nil } }
    /// The value of an `n`, otherwise `nil`.
    var int16: Int16? { if case .int16(let value) = self { value } else { nil } }
    /// The value of a `q`, otherwise `nil`.
    var uint16: UInt16? { if case .uint16(let value) = self { value } else { nil } }
    /// The value of an `i`, otherwise `nil`.
    var int32: Int32? { if case .int32(let value) = self { value } else { nil } }
    /// The value of a `u`, otherwise `nil`.
    var uint32: UInt32? { if case .uint32(let value) = self { value } else { nil } }
    /// The value of an `x`, otherwise `nil`.
    var int64: Int64? { if case .int64(let value) = self { value } else { nil } }
    /// The value of a `t`, otherwise `nil`.
    var uint64: UInt64? { if case .uint64(let value) = self { value } else { nil } }
    /// The value of a `d`, otherwise `nil`.
    var double: Double? { if case .double(let value) = self { value } else { nil } }
    /// The value of an `s`, otherwise `nil`.
    var string: String? { if case .string(let value) = self { value } else { nil } }
    /// The value of an `o`, otherwise `nil`.
    var objectPath: DBusObjectPath? { if case .objectPath(let value) = self { value } else { nil } }
    /// The value of a `g`, otherwise `nil`.
    var signature: String? { if case .signature(let value) = self { value } else { nil } }
    /// The descriptor of an `h`, otherwise `nil`.
    var fileDescriptor: DBusFileDescriptor? { if case .unixFD(let value) = self { value } else { nil } }
    /// The content of a `v`, otherwise `nil`.
    var variant: DBusValue? { if case .variant(let value) = self { value } else { nil } }
    /// The fields of a structure, otherwise `nil`.
    var fields: [DBusValue]? { if case .structure(let value) = self { value } else { nil } }

    /// The elements of an array (not a dictionary), otherwise `nil`.
    var elements: [DBusValue]? { if case .array(_, let value) = self { value } else { nil } }

    /// The entries of a dictionary, otherwise `nil`.
    var entries: [Entry]? { if case .dictionary(_, _, let value) = self { value } else { nil } }

    /// The bytes of an `ay`, otherwise `nil`.
    var bytes: [UInt8]? {
        guard case .array(.byte, let elements) = self else { return nil }
        return elements.compactMap(\.byte)
    }

    /// The strings of an `as`, otherwise `nil`.
    var strings: [String]? {
        guard case .array(.string, let elements) = self else { return nil }
        return elements.compactMap(\.string)
    }

    /// The entries of an `a{sv}` with the variants unwrapped, otherwise `nil`.
    ///
    /// When a key appears more than once, the last entry wins.
    var variantDictionary: [String: DBusValue]? {
        guard case .dictionary(.string, .variant, let entries) = self else { return nil }
        var dictionary: [String: DBusValue] = [:]
        for entry in entries {
            if let key = entry.key.string, let value = entry.value.variant { dictionary[key] = value }
        }
        return dictionary
    }
}
#endif
