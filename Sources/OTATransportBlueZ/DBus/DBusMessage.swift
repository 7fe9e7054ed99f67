#if os(Linux)
/// A D-Bus message: a method call, a reply, an error or a signal, with its arguments.
///
/// A message is a plain value. It is turned into a libdbus message when it is sent and read back
/// into a value, arguments and all, when it arrives; so it can be kept, compared and passed between
/// tasks freely. Unix file descriptors in its arguments stay open while the message (or a copy of
/// the value) is alive.
///
/// ```swift
/// let call = DBusMessage.methodCall(
///     destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
///     member: "SetDiscoveryFilter", arguments: [.variantDictionary(["Transport": .string("le")])])
/// let reply = try await connection.call(call)
/// ```
struct DBusMessage: Hashable, Sendable {
    /// The four kinds of message.
    enum Kind: Hashable, Sendable {
        /// A method call, usually expecting a reply.
        case methodCall
        /// A successful reply to a method call.
        case methodReturn
        /// An error reply to a method call.
        case error
        /// A signal, sent to whoever subscribed.
        case signal
    }

    /// What kind of message this is.
    var kind: Kind
    /// The object the call is for, or the signal is from. Required for calls and signals.
    var path: DBusObjectPath?
    /// The interface of the method or signal. Required for signals.
    var interface: String?
    /// The method or signal name. Required for calls and signals.
    var member: String?
    /// The error's name. Required for errors.
    var errorName: String?
    /// The bus name the message is for; `nil` broadcasts a signal.
    var destination: String?
    /// The unique name of the sender, filled in by the bus.
    var sender: String?
    /// The serial the sending connection gave the message; 0 before it is sent.
    var serial: UInt32
    /// The serial of the call a reply answers; 0 for calls and signals.
    var replySerial: UInt32
    /// Whether a method call expects no reply.
    var noReplyExpected: Bool
    /// The arguments.
    var arguments: [DBusValue]

    /// Creates a message; prefer the factory methods, which fill in what each kind needs.
    init(
        kind: Kind,
        path: DBusObjectPath? = nil,
        interface: String? = nil,
        member: String? = nil,
        errorName: String? = nil,
        destination: String? = nil,
        sender: String? = nil,
        serial: UInt32 = 0,
        replySerial: UInt32 = 0,
        noReplyExpected: Bool = false,
        arguments: [DBusValue] = []
    ) {
        self.kind = kind
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.destination = destination
        self.sender = sender
        self.serial = serial
        self.replySerial = replySerial
        self.noReplyExpected = noReplyExpected
        self.arguments = arguments
    }

    /// A method call.
    static func methodCall(
        destination: String?,
        path: DBusObjectPath,
        interface: String?,
        member: String,
        arguments: [DBusValue] = []
    ) -> DBusMessage {
        DBusMessage(
            kind: .methodCall,
            path: path,
            interface: interface,
            member: member,
            destination: destination,
            arguments: arguments
        )
    }

    /// A signal from the object at `path`; broadcast unless `destination` is given.
    static func signal(
        path: DBusObjectPath,
        interface: String,
        member: String,
        destination: String? = nil,
        arguments: [DBusValue] = []
    ) -> DBusMessage {
        DBusMessage(
            kind: .signal,
            path: path,
            interface: interface,
            member: member,
            destination: destination,
            arguments: arguments
        )
    }

    /// A successful reply to this method call.
    func makeReply(arguments: [DBusValue] = []) -> DBusMessage {
        DBusMessage(kind: .methodReturn, destination: sender, replySerial: serial, arguments: arguments)
    }

    /// An error reply to this method call.
    func makeErrorReply(_ error: DBusError) -> DBusMessage {
        DBusMessage(
            kind: .error,
            errorName: error.name.rawValue,
            destination: sender,
            replySerial: serial,
            arguments: error.message.isEmpty ? [] : [.string(error.message)]
        )
    }

    /// The signature of the arguments, such as `sa{sv}`.
    var signature: String { arguments.map(\.type.signature).joined() }

    /// For an error reply, the error it carries: its name and its first argument as the message.
    var error: DBusError? {
        guard kind == .error else { return nil }
        return DBusError(
            name: DBusError.Name(rawValue: errorName ?? DBusError.Name.failed.rawValue),
            message: arguments.first?.string ?? ""
        )
    }

    /// Converts the arguments to Swift types, checking their number and types.
    ///
    /// ```swift
    /// let objects = try reply.decode([DBusObjectPath: [String: [String: DBusValue]]].self)
    /// let (fd, mtu) = try reply.decode(DBusFileDescriptor.self, UInt16.self)
    /// ```
    ///
    /// - Throws: ``DBusError`` named ``DBusError/Name/invalidArgs`` when the signature is not the
    ///   expected one, naming both.
    func decode<each Value: DBusValueConvertible>(
        _ types: repeat (each Value).Type
    ) throws -> (repeat each Value) {
        var expected = ""
        for type in repeat each types { expected += type.dbusType.signature }
        guard expected == signature else {
            throw DBusError(
                name: .invalidArgs,
                message: "expected arguments '\(expected)', got '\(signature)'\(member.map { " from \($0)" } ?? "")"
            )
        }
        var index = 0
        func next<Next: DBusValueConvertible>(_ type: Next.Type) throws -> Next {
            defer { index += 1 }
            return try Next(dbusValue: arguments[index])
        }
        return (repeat try next(each types))
    }
}
#endif
