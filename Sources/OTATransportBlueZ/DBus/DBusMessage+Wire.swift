#if os(Linux)
// Conversion of messages to and from libdbus messages.

extension DBusMessage {
    static let typeCodes: [Kind: Int32] = [.methodCall: 1, .methodReturn: 2, .error: 3, .signal: 4]

    /// Reads a libdbus message (borrowed, not released) into a value.
    ///
    /// - Throws: ``DBusError`` when the message has an unknown type or holds a value this wrapper
    ///   cannot represent.
    init(decoding message: OpaquePointer) throws {
        guard let kind = Self.typeCodes.first(where: { $0.value == DBusCalls.type(message) })?.key else {
            throw DBusError(name: .invalidArgs, message: "unknown message type \(DBusCalls.type(message))")
        }
        self.init(
            kind: kind,
            path: DBusCalls.field(.path, of: message).map(DBusObjectPath.init(unchecked:)),
            interface: DBusCalls.field(.interface, of: message),
            member: DBusCalls.field(.member, of: message),
            errorName: DBusCalls.field(.errorName, of: message),
            destination: DBusCalls.field(.destination, of: message),
            sender: DBusCalls.field(.sender, of: message),
            serial: DBusCalls.serial(message),
            replySerial: DBusCalls.replySerial(message),
            noReplyExpected: DBusCalls.noReply(message),
            arguments: try DBusValue.decodeAll(from: DBusArgumentReader(reading: message))
        )
    }

    /// Checks that the message has what its kind requires and that every name and argument is
    /// valid, so that libdbus will accept it.
    func validate() throws {
        func invalid(_ reason: String) -> DBusError {
            DBusError(name: .invalidArgs, message: "invalid message: \(reason)")
        }
        switch kind {
        case .methodCall:
            guard path != nil, member != nil else { throw invalid("a method call needs a path and a member") }
        case .signal:
            guard path != nil, interface != nil, member != nil else {
                throw invalid("a signal needs a path, an interface and a member")
            }
        case .methodReturn:
            guard replySerial != 0 else { throw invalid("a reply needs the serial of its call") }
        case .error:
            guard replySerial != 0, errorName != nil else { throw invalid("an error needs a name and a reply serial") }
        }
        if let interface, !DBusCalls.isValidInterface(interface) {
            throw invalid("'\(interface)' is not an interface name")
        }
        if let member, !DBusCalls.isValidMember(member) { throw invalid("'\(member)' is not a member name") }
        if let errorName, !DBusCalls.isValidErrorName(errorName) {
            throw invalid("'\(errorName)' is not an error name")
        }
        if let destination, !DBusCalls.isValidBusName(destination) {
            throw invalid("'\(destination)' is not a bus name")
        }
        if let sender, !DBusCalls.isValidBusName(sender) { throw invalid("'\(sender)' is not a bus name") }
        for argument in arguments { try argument.validate() }
        guard DBusCalls.isValidSignature(signature) else {
            throw DBusError(
                name: .invalidSignature,
                message: "the argument signature '\(signature)' is too long or deep"
            )
        }
    }

    /// Builds a libdbus message; the caller owns the returned reference.
    ///
    /// - Throws: ``DBusError`` when the message is invalid (see ``validate()``) or memory runs out.
    func encode() throws -> OpaquePointer {
        try validate()
        guard let type = Self.typeCodes[kind], let message = DBusCalls.newMessage(type: type) else {
            throw DBusError(name: .noMemory, message: "out of memory while building a message")
        }
        do {
            let fields: [(DBusCalls.Field, String?)] = [
                (.path, path?.rawValue), (.interface, interface), (.member, member), (.errorName, errorName),
                (.destination, destination), (.sender, sender),
            ]
            for case (let field, let value?) in fields {
                guard DBusCalls.setField(field, of: message, to: value) else {
                    throw DBusError(name: .noMemory, message: "out of memory while building a message")
                }
            }
            if replySerial != 0, !DBusCalls.setReplySerial(message, replySerial) {
                throw DBusError(name: .noMemory, message: "out of memory while building a message")
            }
            DBusCalls.setNoReply(message, noReplyExpected)
            var writer = DBusArgumentWriter(appendingTo: message)
            for argument in arguments { try argument.encode(into: &writer) }
        } catch {
            DBusCalls.release(message: message)
            throw error
        }
        return message
    }

    /// Whether any argument carries a Unix file descriptor.
    var carriesFileDescriptors: Bool {
        func carries(_ value: DBusValue) -> Bool {
            switch value {
            case .unixFD: true
            case .array(let element, let elements): Self.mayCarry(element) && elements.contains(where: carries)
            case .dictionary(_, _, let entries): entries.contains { carries($0.key) || carries($0.value) }
            case .structure(let fields): fields.contains(where: carries)
            case .variant(let content): carries(content)
            default: false
            }
        }
        return arguments.contains(where: carries)
    }

    private static func mayCarry(_ type: DBusType) -> Bool {
        switch type {
        case .unixFD, .variant: true
        case .array(let element): mayCarry(element)
        case .dictionary(let key, let value): mayCarry(key) || mayCarry(value)
        case .structure(let fields): fields.contains(where: mayCarry)
        default: false
        }
    }

    /// The message in the D-Bus wire format (without file descriptors), as it would be sent.
    ///
    /// Uses `serial` (1 if unset), which the wire format requires.
    func marshalled() throws -> [UInt8] {
        let message = try encode()
        defer { DBusCalls.release(message: message) }
        DBusCalls.setSerial(message, serial == 0 ? 1 : serial)
        guard let bytes = DBusCalls.marshal(message) else {
            throw DBusError(name: .noMemory, message: "out of memory while marshalling a message")
        }
        return bytes
    }

    /// Parses and validates a message in the D-Bus wire format.
    init(marshalled bytes: [UInt8]) throws {
        let message = try DBusCalls.demarshal(bytes)
        defer { DBusCalls.release(message: message) }
        try self.init(decoding: message)
    }
}
#endif
