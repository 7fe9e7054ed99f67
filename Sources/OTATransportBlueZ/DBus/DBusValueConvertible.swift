#if os(Linux)
/// A Swift type with a fixed D-Bus type, convertible to and from ``DBusValue`` with a type check.
///
/// The standard integer types, `Bool`, `Double`, `String`, ``DBusObjectPath`` and
/// ``DBusFileDescriptor`` conform; so do arrays and dictionaries of conforming types, which makes
/// `[UInt8]` an `ay` and `[DBusObjectPath: [String: [String: DBusValue]]]` the `a{oa{sa{sv}}}` of
/// `GetManagedObjects`. ``DBusValue`` itself stands for a variant (`v`) here, so that
/// `[String: DBusValue]` is the `a{sv}` of properties and options.
///
/// ```swift
/// let (fd, mtu) = try reply.decode(DBusFileDescriptor.self, UInt16.self)   // AcquireWrite's "hq"
/// ```
protocol DBusValueConvertible: Sendable {
    /// The D-Bus type of every value of this type.
    static var dbusType: DBusType { get }

    /// This value as a D-Bus value of type ``dbusType``.
    var dbusValue: DBusValue { get }

    /// Converts a D-Bus value.
    ///
    /// - Throws: ``DBusError`` named ``DBusError/Name/invalidArgs`` when `dbusValue` does not have
    ///   the type ``dbusType``.
    init(dbusValue: DBusValue) throws
}

extension DBusValueConvertible {
    /// The error for a value of the wrong type.
    static func typeMismatch(_ value: DBusValue) -> DBusError {
        DBusError(name: .invalidArgs, message: "expected a value of type '\(dbusType)', got '\(value.type)'")
    }
}

extension DBusValue: DBusValueConvertible {
    /// `v`: as a typed value, a ``DBusValue`` stands for a variant.
    static var dbusType: DBusType { .variant }

    /// This value wrapped in a variant.
    var dbusValue: DBusValue { .variant(self) }

    /// The content of a variant.
    init(dbusValue: DBusValue) throws {
        guard case .variant(let content) = dbusValue else { throw Self.typeMismatch(dbusValue) }
        self = content
    }
}

extension Bool: DBusValueConvertible {
    static var dbusType: DBusType { .bool }
    var dbusValue: DBusValue { .bool(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.bool else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension UInt8: DBusValueConvertible {
    static var dbusType: DBusType { .byte }
    var dbusValue: DBusValue { .byte(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.byte else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension Int16: DBusValueConvertible {
    static var dbusType: DBusType { .int16 }
    var dbusValue: DBusValue { .int16(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.int16 else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension UInt16: DBusValueConvertible {
    static var dbusType: DBusType { .uint16 }
    var dbusValue: DBusValue { .uint16(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.uint16 else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension Int32: DBusValueConvertible {
    static var dbusType: DBusType { .int32 }
    var dbusValue: DBusValue { .int32(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.int32 else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension UInt32: DBusValueConvertible {
    static var dbusType: DBusType { .uint32 }
    var dbusValue: DBusValue { .uint32(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.uint32 else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension Int64: DBusValueConvertible {
    static var dbusType: DBusType { .int64 }
    var dbusValue: DBusValue { .int64(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.int64 else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension UInt64: DBusValueConvertible {
    static var dbusType: DBusType { .uint64 }
    var dbusValue: DBusValue { .uint64(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.uint64 else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension Double: DBusValueConvertible {
    static var dbusType: DBusType { .double }
    var dbusValue: DBusValue { .double(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.double else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension String: DBusValueConvertible {
    static var dbusType: DBusType { .string }
    var dbusValue: DBusValue { .string(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.string else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension DBusObjectPath: DBusValueConvertible {
    static var dbusType: DBusType { .objectPath }
    var dbusValue: DBusValue { .objectPath(self) }
    init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.objectPath else { throw Self.typeMismatch(dbusValue) }
        self = value
    }
}

extension DBusFileDescriptor: DBusValueConvertible {
    static var dbusType: DBusType { .unixFD }
    var dbusValue: DBusValue { .unixFD(self) }

    /// Duplicates the descriptor of an `h` value, which keeps its own.
    convenience init(dbusValue: DBusValue) throws {
        guard let value = dbusValue.fileDescriptor else { throw Self.typeMismatch(dbusValue) }
        try self.init(duplicating: value.rawValue)
    }
}

extension Array: DBusValueConvertible where Element: DBusValueConvertible {
    static var dbusType: DBusType { .array(Element.dbusType) }
    var dbusValue: DBusValue { .array(element: Element.dbusType, map(\.dbusValue)) }
    init(dbusValue: DBusValue) throws {
        guard case .array(Element.dbusType, let elements) = dbusValue else { throw Self.typeMismatch(dbusValue) }
        self = try elements.map(Element.init(dbusValue:))
    }
}

extension Dictionary: DBusValueConvertible where Key: DBusValueConvertible, Value: DBusValueConvertible {
    static var dbusType: DBusType { .dictionary(key: Key.dbusType, value: Value.dbusType) }
    var dbusValue: DBusValue {
        .dictionary(
            key: Key.dbusType,
            value: Value.dbusType,
            entries: map { DBusValue.Entry(key: $0.key.dbusValue, value: $0.value.dbusValue) }
        )
    }

    /// Converts a dictionary; when a key appears more than once, the last entry wins.
    init(dbusValue: DBusValue) throws {
        guard case .dictionary(Key.dbusType, Value.dbusType, let entries) = dbusValue else {
            throw Self.typeMismatch(dbusValue)
        }
        self.init()
        for entry in entries {
            self[try Key(dbusValue: entry.key)] = try Value(dbusValue: entry.value)
        }
    }
}
#endif
