#if os(Linux)
/// Which messages a subscription receives: a D-Bus match rule such as
/// `type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'`.
///
/// The bus uses the rule to route messages to the connection; the connection then checks each
/// message against each subscription's rule, so that a stream only sees what its own rule asks
/// for. Fields left `nil` match anything.
///
/// - Note: The bus compares ``sender`` with a well-known name (`org.bluez`) by its current owner;
///   locally only unique names (`:1.5`) and `org.freedesktop.DBus` are compared, so two
///   subscriptions that differ only by a well-known sender both see each other's signals.
struct DBusMatchRule: Hashable, Sendable, CustomStringConvertible {
    /// The kind of message; signals by default.
    var kind: DBusMessage.Kind?
    /// The sender's bus name.
    var sender: String?
    /// The exact object path.
    var path: DBusObjectPath?
    /// A path and everything below it (`path_namespace`).
    var pathNamespace: DBusObjectPath?
    /// The interface.
    var interface: String?
    /// The member (signal name).
    var member: String?
    /// String arguments that must be equal, by index (`arg0='org.bluez.Device1'`).
    var arguments: [Int: String]

    /// Creates a rule; fields left `nil` match anything.
    init(
        kind: DBusMessage.Kind? = .signal,
        sender: String? = nil,
        path: DBusObjectPath? = nil,
        pathNamespace: DBusObjectPath? = nil,
        interface: String? = nil,
        member: String? = nil,
        arguments: [Int: String] = [:]
    ) {
        self.kind = kind
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }

    /// The rule in the bus's syntax, as given to `AddMatch`.
    var description: String {
        var parts: [String] = []
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            // Values are quoted with '; a quote inside is written as '\'' (close, escaped, reopen).
            parts.append("\(key)='\(value.replacing("'", with: "'\\''"))'")
        }
        let kindName: String? =
            switch kind {
            case .methodCall: "method_call"
            case .methodReturn: "method_return"
            case .error: "error"
            case .signal: "signal"
            case nil: nil
            }
        add("type", kindName)
        add("sender", sender)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("interface", interface)
        add("member", member)
        for (index, value) in arguments.sorted(by: { $0.key < $1.key }) { add("arg\(index)", value) }
        return parts.joined(separator: ",")
    }

    /// Whether `message` satisfies the rule (see the note on ``sender``).
    func matches(_ message: DBusMessage) -> Bool {
        if let kind, message.kind != kind { return false }
        if let sender, sender.hasPrefix(":") || sender == "org.freedesktop.DBus", message.sender != sender {
            return false
        }
        if let path, message.path != path { return false }
        if let pathNamespace {
            guard let messagePath = message.path,
                messagePath == pathNamespace || pathNamespace.isAncestor(of: messagePath)
            else { return false }
        }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        for (index, value) in arguments {
            guard index < message.arguments.count, message.arguments[index].string == value else { return false }
        }
        return true
    }
}
#endif
