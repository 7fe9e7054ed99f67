#if os(Linux)
import OTACore

/// One D-Bus connection to bluetoothd, with calls whose errors come back translated into
/// ``TransportError``s (see ``BlueZFailure``).
struct BlueZSession: Sendable {
    /// The connection; whoever opened the session closes it.
    let connection: DBusConnection
    /// The bus it is connected to, for messages.
    let bus: DBusConnection.Bus

    /// Connects to `bus`.
    static func open(_ bus: DBusConnection.Bus) async throws(TransportError) -> BlueZSession {
        do {
            return BlueZSession(connection: try await DBusConnection.connect(to: bus), bus: bus)
        } catch is CancellationError {
            throw BlueZFailure.cancelled("connecting to \(BlueZFailure.describe(bus))")
        } catch {
            throw BlueZFailure.busUnreachable(bus, error)
        }
    }

    /// Opens a session, runs `body`, and closes the session.
    static func with<Result: Sendable>(
        _ bus: DBusConnection.Bus,
        _ body: (BlueZSession) async throws(TransportError) -> Result
    ) async throws(TransportError) -> Result {
        try await open(bus) { (session) async throws(TransportError) -> Result in
            let result = try await body(session)
            await session.close()
            return result
        }
    }

    /// Opens a session and hands it to `body`, which owns it from then on (a transport or a scan
    /// keeps it open); the session is closed here only when `body` throws.
    static func open<Result>(
        _ bus: DBusConnection.Bus,
        handingTo body: (BlueZSession) async throws(TransportError) -> Result
    ) async throws(TransportError) -> Result {
        let session = try await open(bus)
        do {
            return try await body(session)
        } catch {
            await session.close()
            throw error
        }
    }

    /// Closes the connection.
    func close() async {
        await connection.close()
    }

    /// A failure context for `operation` on this bus.
    func context(
        _ operation: String,
        address: String? = nil,
        connecting: Bool = false,
        timeout: Duration? = nil
    ) -> BlueZFailure.Context {
        BlueZFailure.Context(
            operation: operation, bus: bus, address: address, isConnecting: connecting, timeout: timeout)
    }

    /// Calls a BlueZ method.
    func call(
        _ path: DBusObjectPath,
        _ interface: String,
        _ member: String,
        _ arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25),
        _ context: BlueZFailure.Context
    ) async throws(TransportError) -> DBusMessage {
        // Tolerating nothing, the call either answers or throws.
        guard let reply = try await call(path, interface, member, arguments, timeout: timeout, tolerating: [], context) else {
            throw TransportError(.other, "\(member) returned no reply")
        }
        return reply
    }

    /// Calls a BlueZ method; an error reply named in `tolerated` returns `nil` instead of throwing
    /// (`org.bluez.Error.AlreadyConnected`, `org.bluez.Error.InProgress`).
    func call(
        _ path: DBusObjectPath,
        _ interface: String,
        _ member: String,
        _ arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25),
        tolerating tolerated: Set<String>,
        _ context: BlueZFailure.Context
    ) async throws(TransportError) -> DBusMessage? {
        let message = DBusMessage.methodCall(
            destination: BlueZ.serviceName, path: path, interface: interface, member: member, arguments: arguments)
        do {
            return try await connection.call(message, timeout: timeout)
        } catch let error as DBusError where tolerated.contains(error.name.rawValue) {
            return nil
        } catch {
            var context = context
            if context.timeout == nil { context.timeout = timeout }
            throw BlueZFailure.translate(error, context)
        }
    }

    /// Calls a BlueZ method from a task of its own, so that it is sent even when the calling task
    /// is cancelled (clean-up such as `StopDiscovery` and `Disconnect`); errors are ignored.
    func callDetached(
        _ path: DBusObjectPath,
        _ interface: String,
        _ member: String,
        _ arguments: [DBusValue] = [],
        timeout: Duration
    ) async {
        let connection = connection
        let message = DBusMessage.methodCall(
            destination: BlueZ.serviceName, path: path, interface: interface, member: member, arguments: arguments)
        await Task { _ = try? await connection.call(message, timeout: timeout) }.value
    }

    /// Sends a BlueZ method call without waiting for its reply.
    func callIgnoringReply(
        _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
    )
        async
    {
        var message = DBusMessage.methodCall(
            destination: BlueZ.serviceName, path: path, interface: interface, member: member, arguments: arguments)
        message.noReplyExpected = true
        _ = try? await connection.send(message)
    }

    /// Reads every object BlueZ publishes, parsed.
    func objectTree() async throws(TransportError) -> BlueZObjectTree {
        BlueZObjectTree(managedObjects: try await managedObjects())
    }

    /// Reads every object BlueZ publishes, with all its properties.
    func managedObjects() async throws(TransportError) -> BlueZObjectTree.ManagedObjects {
        let reply = try await call(
            BlueZ.objectManagerPath, BlueZ.Interface.objectManager, "GetManagedObjects", [],
            context("reading BlueZ's objects"))
        do {
            return try reply.decode(BlueZObjectTree.ManagedObjects.self)
        } catch {
            throw TransportError(.other, "reading BlueZ's objects: unexpected reply (\(error))")
        }
    }

    /// Reads all properties of one interface of an object.
    func properties(
        of interface: String, at path: DBusObjectPath, _ context: BlueZFailure.Context
    )
        async throws(TransportError) -> [String: DBusValue]
    {
        let reply = try await call(path, BlueZ.Interface.properties, "GetAll", [.string(interface)], context)
        guard let properties = reply.arguments.first?.variantDictionary else {
            throw TransportError(.other, "\(context.operation): unexpected reply to GetAll (\(reply.signature))")
        }
        return properties
    }

    /// Subscribes to signals from BlueZ that match `rule` (its sender is set to `org.bluez`).
    func signals(
        _ rule: DBusMatchRule, _ context: BlueZFailure.Context
    ) async throws(TransportError) -> AsyncStream<
        DBusMessage
    > {
        var rule = rule
        if rule.sender == nil { rule.sender = BlueZ.serviceName }
        do {
            return try await connection.signals(matching: rule)
        } catch {
            throw BlueZFailure.translate(error, context)
        }
    }

    /// Whether bluetoothd owns its bus name (asks the bus itself, so bluetoothd is not started by
    /// D-Bus activation).
    func isBluetoothdRunning() async throws(TransportError) -> Bool {
        let message = DBusMessage.methodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameHasOwner", arguments: [.string(BlueZ.serviceName)])
        do {
            return try await connection.call(message).decode(Bool.self)
        } catch {
            throw BlueZFailure.translate(error, context("asking the bus whether bluetoothd runs"))
        }
    }
}

/// Signals from BlueZ's object manager, and the rules that select them.
enum BlueZSignals {
    /// `InterfacesAdded` from BlueZ's object manager.
    static let interfacesAdded = DBusMatchRule(
        sender: BlueZ.serviceName, path: BlueZ.objectManagerPath, interface: BlueZ.Interface.objectManager,
        member: "InterfacesAdded")
    /// `InterfacesRemoved` from BlueZ's object manager.
    static let interfacesRemoved = DBusMatchRule(
        sender: BlueZ.serviceName, path: BlueZ.objectManagerPath, interface: BlueZ.Interface.objectManager,
        member: "InterfacesRemoved")

    /// `PropertiesChanged` of objects at or below `path`.
    static func propertiesChanged(below path: DBusObjectPath) -> DBusMatchRule {
        DBusMatchRule(
            sender: BlueZ.serviceName, pathNamespace: path, interface: BlueZ.Interface.properties,
            member: "PropertiesChanged")
    }

    /// Everything BlueZ signals at or below `path` (properties, `Device1.Disconnected`).
    static func everything(below path: DBusObjectPath) -> DBusMatchRule {
        DBusMatchRule(sender: BlueZ.serviceName, pathNamespace: path)
    }

    /// bluetoothd leaving (or joining) the bus.
    static let ownerChanged = DBusMatchRule(
        sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
        member: "NameOwnerChanged", arguments: [0: BlueZ.serviceName])

    /// The object and its interfaces from an `InterfacesAdded` signal.
    static func added(_ signal: DBusMessage) -> (DBusObjectPath, [String: [String: DBusValue]])? {
        try? signal.decode(DBusObjectPath.self, [String: [String: DBusValue]].self)
    }

    /// The object and the names of its removed interfaces from an `InterfacesRemoved` signal.
    static func removed(_ signal: DBusMessage) -> (DBusObjectPath, [String])? {
        try? signal.decode(DBusObjectPath.self, [String].self)
    }

    /// The interface, changed properties and invalidated names of a `PropertiesChanged` signal.
    static func changed(_ signal: DBusMessage) -> (String, [String: DBusValue], [String])? {
        guard signal.member == "PropertiesChanged", signal.interface == BlueZ.Interface.properties else { return nil }
        return try? signal.decode(String.self, [String: DBusValue].self, [String].self)
    }
}
#endif
