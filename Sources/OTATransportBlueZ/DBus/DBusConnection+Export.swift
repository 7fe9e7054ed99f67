#if os(Linux)
extension DBusConnection {
    private static let propertiesInterface = "org.freedesktop.DBus.Properties"
    private static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"

    /// An exported object and the task that answers its calls, one at a time.
    struct ExportedObject {
        var object: DBusObject
        /// Calls waiting for the method handler; `nil` without a handler.
        let inbox: AsyncStream<DBusMessage>.Continuation?
        let worker: Task<Void, Never>?

        func stop() {
            inbox?.finish()
            worker?.cancel()
        }
    }

    /// Serves an object at its path until ``unexport(_:)`` or ``close()``.
    ///
    /// If an exported object manager lies above the path, it announces the object with
    /// `InterfacesAdded`.
    ///
    /// - Throws: ``DBusError`` when the connection is closed or an object is already exported at
    ///   the path.
    func export(_ object: DBusObject) throws {
        guard isConnected else { throw DBusError.connectionClosed }
        guard exportedObjects[object.path] == nil else {
            throw DBusError(
                name: "org.freedesktop.DBus.Error.ObjectPathInUse",
                message: "an object is already exported at \(object.path)"
            )
        }
        var inbox: AsyncStream<DBusMessage>.Continuation?
        var worker: Task<Void, Never>?
        if let handler = object.methodHandler {
            let (calls, continuation) = AsyncStream.makeStream(of: DBusMessage.self, bufferingPolicy: .unbounded)
            inbox = continuation
            worker = Task { [weak self] in
                for await call in calls {
                    let reply = await Self.answer(call, with: handler)
                    guard !call.noReplyExpected else { continue }
                    await self?.sendReply(reply, to: call)
                }
            }
        }
        exportedObjects[object.path] = ExportedObject(object: object, inbox: inbox, worker: worker)
        if !object.interfaces.isEmpty {
            announce(object.path) { manager in
                .signal(
                    path: manager,
                    interface: Self.objectManagerInterface,
                    member: "InterfacesAdded",
                    arguments: [.objectPath(object.path), Self.interfacesValue(object.interfaces)]
                )
            }
        }
    }

    /// Stops serving the object at `path`: the call its handler is running is cancelled, calls
    /// still queued for it get no reply (their callers time out).
    ///
    /// If an exported object manager lies above the path, it announces the removal with
    /// `InterfacesRemoved`.
    func unexport(_ path: DBusObjectPath) {
        guard let exported = exportedObjects.removeValue(forKey: path) else { return }
        exported.stop()
        let interfaces = exported.object.interfaces.keys.sorted()
        if !interfaces.isEmpty {
            announce(path) { manager in
                .signal(
                    path: manager,
                    interface: Self.objectManagerInterface,
                    member: "InterfacesRemoved",
                    arguments: [.objectPath(path), .strings(interfaces)]
                )
            }
        }
    }

    /// Changes properties of an exported object and emits
    /// `org.freedesktop.DBus.Properties.PropertiesChanged` with the new values.
    ///
    /// This is how a GATT server notifies: set the characteristic's `Value`.
    ///
    /// - Throws: ``DBusError`` when no object is exported at `path`, a value is invalid, or the
    ///   connection is closed.
    func setProperties(_ changes: [String: DBusValue], of interface: String, at path: DBusObjectPath) throws {
        guard exportedObjects[path] != nil else {
            throw DBusError(name: .unknownObject, message: "no object is exported at \(path)")
        }
        try send(
            .signal(
                path: path,
                interface: Self.propertiesInterface,
                member: "PropertiesChanged",
                arguments: [.string(interface), .variantDictionary(changes), .strings([])]
            )
        )
        exportedObjects[path]?.object.interfaces[interface, default: [:]].merge(changes) { $1 }
    }

    /// The current properties of an interface of an exported object.
    func properties(of interface: String, at path: DBusObjectPath) -> [String: DBusValue]? {
        exportedObjects[path]?.object.interfaces[interface]
    }

    /// Answers or queues a method call for an exported object; returns `false` (so that libdbus
    /// answers `UnknownObject`) when no object lives at its path.
    func dispatch(methodCall call: DBusMessage) -> Bool {
        guard let path = call.path, let exported = exportedObjects[path] else { return false }
        let object = exported.object
        switch (call.interface, call.member) {
        case (Self.propertiesInterface, "Get"):
            answerNow(call) {
                let (interface, name) = try call.decode(String.self, String.self)
                guard let value = try Self.properties(of: interface, in: object)[name] else {
                    throw DBusError(name: .unknownProperty, message: "\(interface) has no property \(name)")
                }
                return [.variant(value)]
            }
        case (Self.propertiesInterface, "GetAll"):
            answerNow(call) {
                [.variantDictionary(try Self.properties(of: try call.decode(String.self), in: object))]
            }
        case (Self.objectManagerInterface, "GetManagedObjects") where object.isObjectManager:
            answerNow(call) { [managedObjects(below: path)] }
        default:
            if let inbox = exported.inbox {
                inbox.yield(call)
            } else if call.interface == Self.propertiesInterface, call.member == "Set" {
                answerNow(call) {
                    throw DBusError(name: .propertyReadOnly, message: "the properties of \(path) are read-only")
                }
            } else {
                answerNow(call) {
                    throw DBusError(
                        name: .unknownMethod,
                        message: "\(path) has no method \(call.interface.map { "\($0)." } ?? "")\(call.member ?? "")"
                    )
                }
            }
        }
        return true
    }

    private static func properties(of interface: String, in object: DBusObject) throws -> [String: DBusValue] {
        guard let properties = object.interfaces[interface] else {
            throw DBusError(name: .unknownInterface, message: "\(object.path) has no interface \(interface)")
        }
        return properties
    }

    /// The `a{oa{sa{sv}}}` of `GetManagedObjects`: every exported object below `manager`.
    private func managedObjects(below manager: DBusObjectPath) -> DBusValue {
        let objects = exportedObjects.values.map(\.object).filter { manager.isAncestor(of: $0.path) }
        return .dictionary(
            key: .objectPath,
            value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)),
            entries: objects.sorted { $0.path < $1.path }.map {
                DBusValue.Entry(key: .objectPath($0.path), value: Self.interfacesValue($0.interfaces))
            }
        )
    }

    /// The `a{sa{sv}}` of an object's interfaces and properties.
    private static func interfacesValue(_ interfaces: [String: [String: DBusValue]]) -> DBusValue {
        .dictionary(
            key: .string,
            value: .dictionary(key: .string, value: .variant),
            entries: interfaces.sorted { $0.key < $1.key }.map {
                DBusValue.Entry(key: .string($0.key), value: .variantDictionary($0.value))
            }
        )
    }

    /// Sends the signal `make` builds from each exported object manager above `path`.
    private func announce(_ path: DBusObjectPath, _ make: (DBusObjectPath) -> DBusMessage) {
        for exported in exportedObjects.values where exported.object.isObjectManager {
            if exported.object.path.isAncestor(of: path) { _ = try? send(make(exported.object.path)) }
        }
    }

    /// Replies to a call right away with what `body` returns or throws.
    private func answerNow(_ call: DBusMessage, _ body: () throws -> [DBusValue]) {
        guard !call.noReplyExpected else { return }
        let reply: DBusMessage
        do {
            reply = call.makeReply(arguments: try body())
        } catch {
            reply = call.makeErrorReply(Self.replyError(for: error))
        }
        sendReply(reply, to: call)
    }

    /// Sends a reply; one that cannot be sent (an invalid value) becomes an error reply.
    private func sendReply(_ reply: DBusMessage, to call: DBusMessage) {
        do {
            try send(reply)
        } catch {
            guard isConnected else { return }
            _ = try? send(call.makeErrorReply(DBusError(name: .failed, message: "invalid reply: \(error)")))
        }
    }

    /// Runs the method handler for a call and turns its outcome into a reply.
    private static func answer(_ call: DBusMessage, with handler: DBusMethodHandler) async -> DBusMessage {
        do {
            return call.makeReply(arguments: try await handler(call))
        } catch {
            return call.makeErrorReply(replyError(for: error))
        }
    }

    private static func replyError(for error: any Error) -> DBusError {
        switch error {
        case let error as DBusError: error
        case is CancellationError: DBusError(name: .failed, message: "the call was cancelled")
        default: DBusError(name: .failed, message: String(describing: error))
        }
    }
}
#endif
