#if os(Linux)
/// The type of a D-Bus value: one complete type of a signature, such as `s`, `ay` or `a{sv}`.
///
/// A dictionary is its own case (`a{kv}`) rather than an array of dictionary entries, because
/// that is how it is used; its signature is the array's.
enum DBusType: Hashable, Sendable, CustomStringConvertible {
    /// `y`, an unsigned 8-bit integer.
    case byte
    /// `b`, a boolean.
    case bool
    /// `n`, a signed 16-bit integer.
    case int16
    /// `q`, an unsigned 16-bit integer.
    case uint16
    /// `i`, a signed 32-bit integer.
    case int32
    /// `u`, an unsigned 32-bit integer.
    case uint32
    /// `x`, a signed 64-bit integer.
    case int64
    /// `t`, an unsigned 64-bit integer.
    case uint64
    /// `d`, an IEEE 754 double.
    case double
    /// `s`, a UTF-8 string.
    case string
    /// `o`, an object path.
    case objectPath
    /// `g`, a signature.
    case signature
    /// `h`, a Unix file descriptor.
    case unixFD
    /// `v`, a value that carries its own type.
    case variant
    /// `aT`, an array of values of one type.
    indirect case array(DBusType)
    /// `a{KV}`, a dictionary: an array of entries with a basic key type.
    indirect case dictionary(key: DBusType, value: DBusType)
    /// `(…)`, a structure of one or more fields.
    case structure([DBusType])

    /// The type's signature, such as `a{sv}`.
    var signature: String {
        switch self {
        case .array(let element): "a" + element.signature
        case .dictionary(let key, let value): "a{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        default: String(UnicodeScalar(code))
        }
    }

    var description: String { signature }

    /// Whether the type is basic: usable as a dictionary key.
    var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// The type's code on the wire: its signature's first character, `r` for structures.
    var code: UInt8 {
        switch self {
        case .byte: UInt8(ascii: "y")
        case .bool: UInt8(ascii: "b")
        case .int16: UInt8(ascii: "n")
        case .uint16: UInt8(ascii: "q")
        case .int32: UInt8(ascii: "i")
        case .uint32: UInt8(ascii: "u")
        case .int64: UInt8(ascii: "x")
        case .uint64: UInt8(ascii: "t")
        case .double: UInt8(ascii: "d")
        case .string: UInt8(ascii: "s")
        case .objectPath: UInt8(ascii: "o")
        case .signature: UInt8(ascii: "g")
        case .unixFD: UInt8(ascii: "h")
        case .variant: UInt8(ascii: "v")
        case .array, .dictionary: UInt8(ascii: "a")
        case .structure: UInt8(ascii: "r")
        }
    }

    /// Parses a signature of exactly one complete type.
    ///
    /// - Throws: ``DBusError`` named ``DBusError/Name/invalidSignature`` when the signature is
    ///   malformed or holds more or less than one type.
    init(signature: String) throws {
        let types = try Self.types(inSignature: signature)
        guard types.count == 1 else {
            throw DBusError(name: .invalidSignature, message: "'\(signature)' is not a single complete type")
        }
        self = types[0]
    }

    /// Parses a signature of any number of complete types, such as a message's `sa{sv}`.
    ///
    /// - Throws: ``DBusError`` named ``DBusError/Name/invalidSignature`` when it is malformed.
    static func types(inSignature signature: String) throws -> [DBusType] {
        var parser = Parser(bytes: Array(signature.utf8))
        guard parser.bytes.count <= 255 else { throw parser.failure(signature, "longer than 255 bytes") }
        var types: [DBusType] = []
        while !parser.isAtEnd {
            types.append(try parser.parseType(signature))
        }
        return types
    }

    /// A recursive-descent parser over a signature's bytes.
    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        var arrayDepth = 0
        var structDepth = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index == bytes.count }

        func failure(_ signature: String, _ reason: String) -> DBusError {
            DBusError(name: .invalidSignature, message: "invalid signature '\(signature)': \(reason)")
        }

        mutating func parseType(_ signature: String) throws -> DBusType {
            guard !isAtEnd else { throw failure(signature, "a type is missing") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "y"): return .byte
            case UInt8(ascii: "b"): return .bool
            case UInt8(ascii: "n"): return .int16
            case UInt8(ascii: "q"): return .uint16
            case UInt8(ascii: "i"): return .int32
            case UInt8(ascii: "u"): return .uint32
            case UInt8(ascii: "x"): return .int64
            case UInt8(ascii: "t"): return .uint64
            case UInt8(ascii: "d"): return .double
            case UInt8(ascii: "s"): return .string
            case UInt8(ascii: "o"): return .objectPath
            case UInt8(ascii: "g"): return .signature
            case UInt8(ascii: "h"): return .unixFD
            case UInt8(ascii: "v"): return .variant
            case UInt8(ascii: "a"):
                arrayDepth += 1
                defer { arrayDepth -= 1 }
                guard arrayDepth <= 32 else { throw failure(signature, "arrays nested deeper than 32") }
                if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                    index += 1
                    let key = try parseType(signature)
                    guard key.isBasic else { throw failure(signature, "dictionary key \(key) is not basic") }
                    let value = try parseType(signature)
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                        throw failure(signature, "a dictionary entry needs exactly a key and a value")
                    }
                    index += 1
                    return .dictionary(key: key, value: value)
                }
                return .array(try parseType(signature))
            case UInt8(ascii: "("):
                structDepth += 1
                defer { structDepth -= 1 }
                guard structDepth <= 32 else { throw failure(signature, "structures nested deeper than 32") }
                var fields: [DBusType] = []
                while index < bytes.count, bytes[index] != UInt8(ascii: ")") {
                    fields.append(try parseType(signature))
                }
                guard index < bytes.count else { throw failure(signature, "unclosed structure") }
                guard !fields.isEmpty else { throw failure(signature, "empty structure") }
                index += 1
                return .structure(fields)
            default:
                throw failure(signature, "unexpected '\(String(UnicodeScalar(byte)))'")
            }
        }
    }
}
#endif
