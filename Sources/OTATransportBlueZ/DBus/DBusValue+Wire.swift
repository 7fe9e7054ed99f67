#if os(Linux)
// Marshalling of values into and out of libdbus messages, through the argument iterators.

extension DBusValue {
    /// The deepest nesting of containers (arrays, structures, variants) a value may have.
    static let maximumDepth = 64

    /// Checks that libdbus will accept the value: element types match their container, strings
    /// are valid UTF-8 without NUL, signatures and nesting are within the D-Bus limits.
    ///
    /// libdbus aborts the process on such mistakes, so every value is checked before encoding.
    func validate(depth: Int = 0) throws {
        guard depth <= Self.maximumDepth else {
            throw DBusError(name: .invalidArgs, message: "value nested deeper than \(Self.maximumDepth) containers")
        }
        switch self {
        case .string(let string):
            guard DBusCalls.isValidUTF8(string) else {
                throw DBusError(name: .invalidArgs, message: "string contains a NUL character or invalid UTF-8")
            }
        case .signature(let signature):
            guard DBusCalls.isValidSignature(signature) else {
                throw DBusError(name: .invalidSignature, message: "'\(signature)' is not a valid signature")
            }
        case .unixFD(let descriptor):
            guard descriptor.rawValue >= 0 else {
                throw DBusError(name: .invalidArgs, message: "file descriptor was already taken or closed")
            }
        case .array(.byte, let elements):
            // libdbus aborts on a longer fixed array (DBUS_MAXIMUM_ARRAY_LENGTH).
            guard elements.count <= 64 << 20 else {
                throw DBusError(name: .invalidArgs, message: "byte array longer than 64 MiB")
            }
            for value in elements {
                guard case .byte = value else { throw Self.mismatch(value, in: .array(.byte)) }
            }
        case .array(let element, let elements):
            try Self.validateContainerType(.array(element))
            for value in elements {
                guard value.type == element else { throw Self.mismatch(value, in: .array(element)) }
                try value.validate(depth: depth + 1)
            }
        case .dictionary(let key, let valueType, let entries):
            let type = DBusType.dictionary(key: key, value: valueType)
            try Self.validateContainerType(type)
            for entry in entries {
                guard entry.key.type == key, entry.value.type == valueType else {
                    throw DBusError(
                        name: .invalidArgs,
                        message: "entry {\(entry.key.type)\(entry.value.type)} in a dictionary of type '\(type)'"
                    )
                }
                try entry.key.validate(depth: depth + 1)
                try entry.value.validate(depth: depth + 1)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError(name: .invalidArgs, message: "a structure needs a field") }
            try Self.validateContainerType(type)
            for field in fields { try field.validate(depth: depth + 1) }
        case .variant(let content):
            try Self.validateContainerType(content.type)
            try content.validate(depth: depth + 1)
        case .byte, .bool, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .objectPath:
            break
        }
    }

    private static func validateContainerType(_ type: DBusType) throws {
        guard DBusCalls.isValidSingleType(type.signature) else {
            throw DBusError(name: .invalidSignature, message: "'\(type)' is not a valid D-Bus type")
        }
    }

    private static func mismatch(_ value: DBusValue, in type: DBusType) -> DBusError {
        DBusError(name: .invalidArgs, message: "element of type '\(value.type)' in an array of type '\(type)'")
    }

    /// Appends the value, which ``validate(depth:)`` accepted.
    func encode(into writer: inout DBusArgumentWriter) throws {
        switch self {
        case .byte(let value): try writer.appendFixed(value, code: DBusType.byte.code)
        case .bool(let value): try writer.appendFixed(UInt32(value ? 1 : 0), code: DBusType.bool.code)
        case .int16(let value): try writer.appendFixed(value, code: DBusType.int16.code)
        case .uint16(let value): try writer.appendFixed(value, code: DBusType.uint16.code)
        case .int32(let value): try writer.appendFixed(value, code: DBusType.int32.code)
        case .uint32(let value): try writer.appendFixed(value, code: DBusType.uint32.code)
        case .int64(let value): try writer.appendFixed(value, code: DBusType.int64.code)
        case .uint64(let value): try writer.appendFixed(value, code: DBusType.uint64.code)
        case .double(let value): try writer.appendFixed(value, code: DBusType.double.code)
        case .string(let value): try writer.appendString(value, code: DBusType.string.code)
        case .objectPath(let value): try writer.appendString(value.rawValue, code: DBusType.objectPath.code)
        case .signature(let value): try writer.appendString(value, code: DBusType.signature.code)
        case .unixFD(let value): try writer.appendFixed(value.rawValue, code: DBusType.unixFD.code)
        case .array(.byte, let elements):
            try writer.withContainer(UInt8(ascii: "a"), signature: "y") { array in
                if !elements.isEmpty { try array.appendBytes(elements.compactMap(\.byte)) }
            }
        case .array(let element, let elements):
            try writer.withContainer(UInt8(ascii: "a"), signature: element.signature) { array in
                for value in elements { try value.encode(into: &array) }
            }
        case .dictionary(let key, let value, let entries):
            try writer.withContainer(UInt8(ascii: "a"), signature: "{\(key)\(value)}") { array in
                for entry in entries {
                    try array.withContainer(UInt8(ascii: "e"), signature: nil) { pair in
                        try entry.key.encode(into: &pair)
                        try entry.value.encode(into: &pair)
                    }
                }
            }
        case .structure(let fields):
            try writer.withContainer(UInt8(ascii: "r"), signature: nil) { structure in
                for field in fields { try field.encode(into: &structure) }
            }
        case .variant(let content):
            try writer.withContainer(DBusType.variant.code, signature: content.type.signature) { variant in
                try content.encode(into: &variant)
            }
        }
    }

    /// Reads the current argument of `reader`.
    ///
    /// - Throws: ``DBusError`` named ``DBusError/Name/invalidSignature`` for a type this wrapper
    ///   does not know, or ``DBusError/Name/failed`` when a file descriptor cannot be received.
    static func decode(from reader: DBusArgumentReader) throws -> DBusValue {
        let code = reader.currentCode
        switch code {
        case DBusType.byte.code: return .byte(reader.readFixed(as: UInt8.self))
        case DBusType.bool.code: return .bool(reader.readFixed(as: UInt32.self) != 0)
        case DBusType.int16.code: return .int16(reader.readFixed(as: Int16.self))
        case DBusType.uint16.code: return .uint16(reader.readFixed(as: UInt16.self))
        case DBusType.int32.code: return .int32(reader.readFixed(as: Int32.self))
        case DBusType.uint32.code: return .uint32(reader.readFixed(as: UInt32.self))
        case DBusType.int64.code: return .int64(reader.readFixed(as: Int64.self))
        case DBusType.uint64.code: return .uint64(reader.readFixed(as: UInt64.self))
        case DBusType.double.code: return .double(reader.readFixed(as: Double.self))
        case DBusType.string.code: return .string(reader.readString())
        case DBusType.objectPath.code: return .objectPath(DBusObjectPath(unchecked: reader.readString()))
        case DBusType.signature.code: return .signature(reader.readString())
        case DBusType.unixFD.code:
            // libdbus hands out a duplicate that the caller owns.
            let descriptor = reader.readFixed(as: Int32.self)
            guard descriptor >= 0 else {
                throw DBusError(name: .failed, message: "could not receive a file descriptor")
            }
            return .unixFD(DBusFileDescriptor(taking: descriptor))
        case DBusType.variant.code:
            return .variant(try decode(from: reader.contents()))
        case UInt8(ascii: "r"):
            return .structure(try decodeAll(from: reader.contents()))
        case UInt8(ascii: "a"):
            switch try DBusType(signature: reader.currentSignature) {
            case .array(.byte):
                return .bytes(reader.contents().readBytes())
            case .array(let element):
                return .array(element: element, try decodeAll(from: reader.contents()))
            case .dictionary(let key, let value):
                var entries: [Entry] = []
                var array = reader.contents()
                while array.currentCode != 0 {
                    var pair = array.contents()
                    let entryKey = try decode(from: pair)
                    pair.advance()
                    entries.append(Entry(key: entryKey, value: try decode(from: pair)))
                    array.advance()
                }
                return .dictionary(key: key, value: value, entries: entries)
            default:
                throw DBusError(name: .invalidSignature, message: "unexpected array '\(reader.currentSignature)'")
            }
        default:
            throw DBusError(name: .invalidSignature, message: "unknown D-Bus type code \(code)")
        }
    }

    /// Reads every argument from the current one to the end of `reader`.
    static func decodeAll(from reader: DBusArgumentReader) throws -> [DBusValue] {
        var reader = reader
        var values: [DBusValue] = []
        while reader.currentCode != 0 {
            values.append(try decode(from: reader))
            reader.advance()
        }
        return values
    }
}

extension DBusArgumentWriter {
    /// Opens a container, fills it with `body`, and closes it (or abandons it when `body` throws).
    mutating func withContainer(
        _ code: UInt8,
        signature: String?,
        _ body: (inout DBusArgumentWriter) throws -> Void
    ) throws {
        var child = try openContainer(code, signature: signature)
        do {
            try body(&child)
        } catch {
            abandon(&child)
            throw error
        }
        try close(&child)
    }
}
#endif
