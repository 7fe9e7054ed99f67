#if os(Linux)
/// A connection to a D-Bus message bus: method calls with replies, signals, and objects served to
/// other peers. Everything BlueZ's central and peripheral roles need, and nothing BlueZ-specific.
///
/// ```swift
/// let bus = try await DBusConnection.connect(to: .system)
/// let reply = try await bus.call(.methodCall(
///     destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
///     member: "GetManagedObjects"))
/// let objects = try reply.decode([DBusObjectPath: [String: [String: DBusValue]]].self)
/// await bus.close()
/// ```
///
/// Signals arrive through ``signals(matching:)`` as an `AsyncStream`; objects are served with
/// ``export(_:)``.
///
/// - Note: Threading. The connection is an actor whose executor is a private serial dispatch queue,
///   and libdbus's I/O runs on that same queue: socket readiness and timeouts are dispatch sources,
///   incoming messages are dispatched from there, and every libdbus call happens on it, one at a
///   time. Nothing runs on, or blocks, Swift's cooperative thread pool; exported objects' handlers
///   run as ordinary tasks.
///
/// - Important: Lifetime. ``close()`` (or leaving ``withConnection(to:isolation:_:)``) fails the
///   calls still waiting with ``DBusError/connectionClosed``, finishes every signal stream and
///   unexports every object. A connection that is no longer referenced closes itself, but signal
///   streams keep their connection alive until they end. When the bus goes away, the same happens
///   with ``DBusError/connectionLost``.
///
/// - Note: Access. The D-Bus layer is internal to the module; the type is public only as the home
///   of ``Bus``, which apps pass to the BlueZ roles. Apps also see ``DBusObjectPath`` (object paths
///   in BlueZ's API) and ``DBusError`` (inside `BlueZPeripheralError`).
public actor DBusConnection {
    /// The bus to connect to.
    public enum Bus: Hashable, Sendable {
        /// The system bus, where BlueZ lives.
        case system
        /// The session bus of the current login session.
        case session
        /// A bus at a D-Bus address, such as `unix:path=/run/test/bus` (a private `dbus-daemon`).
        case address(String)
    }

    nonisolated let executor: DBusExecutor
    nonisolated let loop: DBusEventLoop

    /// The connection's serial executor (a private dispatch queue shared with libdbus's I/O).
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The unique name the bus gave this connection, such as `:1.42`.
    nonisolated var uniqueName: String { loop.uniqueName }

    /// Whether this connection can carry Unix file descriptors (`h` arguments).
    nonisolated var canPassFileDescriptors: Bool { loop.canPassFileDescriptors }

    /// Why the connection closed, or `nil` while it is open.
    private var closeReason: DBusError?
    private var lastID: UInt64 = 0
    private var pendingReplies: [UInt64: DBusPendingReply] = [:]
    /// Signal subscriptions by id; see DBusConnection+Signals.swift.
    var subscriptions: [UInt64: Subscription] = [:]
    /// Exported objects by path; see DBusConnection+Export.swift.
    var exportedObjects: [DBusObjectPath: ExportedObject] = [:]

    private init(executor: DBusExecutor, loop: DBusEventLoop) {
        self.executor = executor
        self.loop = loop
    }

    deinit {
        let loop = loop
        loop.queue.async { loop.close() }
        for exported in exportedObjects.values { exported.stop() }
    }

    /// Connects to a bus and registers on it.
    ///
    /// - Throws: ``DBusError`` when the bus cannot be reached (for the system bus,
    ///   `org.freedesktop.DBus.Error.FileNotFound` or `NoServer` when no daemon runs).
    static func connect(to bus: Bus) async throws -> DBusConnection {
        let executor = DBusExecutor(label: "OTATransportBlueZ.DBusConnection")
        // Connecting blocks, so it happens on the connection's own queue.
        let loop = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<DBusEventLoop, any Error>) in
            executor.queue.async {
                continuation.resume(with: Result { try DBusEventLoop.open(bus, queue: executor.queue) })
            }
        }
        let connection = DBusConnection(executor: executor, loop: loop)
        try await connection.start()
        return connection
    }

    /// Connects to a bus, runs `body`, and closes the connection when `body` returns or throws.
    static func withConnection<Result>(
        to bus: Bus,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (DBusConnection) async throws -> Result
    ) async throws -> Result {
        let connection = try await connect(to: bus)
        do {
            let result = try await body(connection)
            await connection.close()
            return result
        } catch {
            await connection.close()
            throw error
        }
    }

    private func start() throws {
        try loop.start(owner: self)
    }

    /// Whether the connection is open.
    var isConnected: Bool { closeReason == nil }

    /// Closes the connection: pending calls fail with ``DBusError/connectionClosed``, signal
    /// streams finish, exported objects are removed. Calling it again does nothing.
    func close() {
        shutDown(.connectionClosed)
    }

    private func shutDown(_ reason: DBusError) {
        guard closeReason == nil else { return }
        closeReason = reason
        for waiter in pendingReplies.values {
            waiter.fail(reason)
            waiter.release()
        }
        pendingReplies = [:]
        for subscription in subscriptions.values { subscription.continuation.finish() }
        subscriptions = [:]
        for exported in exportedObjects.values { exported.stop() }
        exportedObjects = [:]
        loop.close()
    }

    func makeID() -> UInt64 {
        lastID += 1
        return lastID
    }

    // MARK: - Sending

    /// Calls a method and waits for its reply.
    ///
    /// - Parameters:
    ///   - message: a ``DBusMessage/Kind/methodCall``.
    ///   - timeout: how long to wait for the reply (libdbus's default is 25 seconds).
    /// - Returns: the ``DBusMessage/Kind/methodReturn``.
    /// - Throws: ``DBusError``: the error reply's name and message; ``DBusError/Name/noReply`` when
    ///   the timeout expires; ``DBusError/connectionClosed`` or ``DBusError/connectionLost`` when
    ///   the connection closes first; ``DBusError/Name/invalidArgs`` when the message is invalid.
    ///   `CancellationError` when the task is cancelled (the reply is then ignored).
    func call(_ message: DBusMessage, timeout: Duration = .seconds(25)) async throws -> DBusMessage {
        try Task.checkCancellation()
        guard message.kind == .methodCall else {
            throw DBusError(name: .invalidArgs, message: "only a method call can be answered")
        }
        var message = message
        message.noReplyExpected = false
        let encoded = try encodeForSending(message)
        let id = makeID()
        let reply: DBusMessage
        do {
            reply = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    startCall(encoded, id: id, timeout: timeout, continuation: continuation)
                }
            } onCancel: {
                Task { await self.cancelCall(id) }
            }
        } catch {
            pendingReplies.removeValue(forKey: id)?.release()
            throw error
        }
        pendingReplies.removeValue(forKey: id)?.release()
        if let error = reply.error { throw error }
        return reply
    }

    /// Sends a message without waiting for anything: a signal, a reply, or a call whose reply does
    /// not matter (set ``DBusMessage/noReplyExpected``).
    ///
    /// - Returns: the serial the message was sent with.
    /// - Throws: ``DBusError`` when the connection is closed or the message is invalid.
    @discardableResult
    func send(_ message: DBusMessage) throws -> UInt32 {
        let encoded = try encodeForSending(message)
        defer { DBusCalls.release(message: encoded) }
        guard let serial = DBusCalls.send(loop.connection, encoded) else {
            throw DBusError(name: .noMemory, message: "out of memory while sending a message")
        }
        return serial
    }

    private func encodeForSending(_ message: DBusMessage) throws -> OpaquePointer {
        if let closeReason { throw closeReason }
        if !canPassFileDescriptors, message.carriesFileDescriptors {
            throw DBusError(name: .notSupported, message: "this connection cannot pass Unix file descriptors")
        }
        return try message.encode()
    }

    private func startCall(
        _ encoded: OpaquePointer,
        id: UInt64,
        timeout: Duration,
        continuation: CheckedContinuation<DBusMessage, any Error>
    ) {
        defer { DBusCalls.release(message: encoded) }
        let waiter = DBusPendingReply(continuation)
        if let closeReason {
            waiter.fail(closeReason)
            return
        }
        guard
            let pending = DBusCalls.sendWithReply(
                loop.connection,
                encoded,
                timeoutMilliseconds: Self.milliseconds(timeout)
            )
        else {
            waiter.fail(DBusError.connectionLost)
            return
        }
        // Registered before asking for the notification, in case libdbus reports completion at once.
        pendingReplies[id] = waiter
        guard waiter.attach(to: pending) else {
            waiter.fail(DBusError(name: .noMemory, message: "out of memory while sending a message"))
            return
        }
    }

    private func cancelCall(_ id: UInt64) {
        guard let waiter = pendingReplies.removeValue(forKey: id) else { return }
        waiter.fail(CancellationError())
        waiter.release()
    }

    static func milliseconds(_ timeout: Duration) -> Int32 {
        let (seconds, attoseconds) = timeout.components
        let milliseconds = (Double(seconds) * 1000 + Double(attoseconds) / 1e15).rounded(.up)
        return milliseconds >= Double(DBusCalls.infiniteTimeout)
            ? DBusCalls.infiniteTimeout : Int32(max(0, milliseconds))
    }

    // MARK: - Receiving

    /// Handles an incoming message (from the event loop's filter); returns whether it was handled.
    func receive(_ message: DBusMessage) -> Bool {
        switch message.kind {
        case .signal:
            if message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
                shutDown(.connectionLost)
                return true
            }
            deliver(signal: message)
            return false
        case .methodCall:
            return dispatch(methodCall: message)
        case .methodReturn, .error:
            return false
        }
    }

    // MARK: - The bus

    /// Calls a method of the bus itself (`org.freedesktop.DBus`).
    func callBus(_ member: String, _ arguments: [DBusValue]) async throws -> DBusMessage {
        try await call(Self.busMethod(member, arguments))
    }

    static func busMethod(_ member: String, _ arguments: [DBusValue]) -> DBusMessage {
        .methodCall(
            destination: "org.freedesktop.DBus",
            path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus",
            member: member,
            arguments: arguments
        )
    }

    /// Takes ownership of a well-known bus name, such as `com.example.Updater`.
    ///
    /// - Parameter replaceExisting: take the name from its current owner if that owner allows it.
    /// - Throws: ``DBusError``, named ``DBusError/Name/failed`` when another connection owns the name.
    func requestName(_ name: String, replaceExisting: Bool = false) async throws {
        let doNotQueue: UInt32 = 4
        let replace: UInt32 = replaceExisting ? 2 : 0
        let reply = try await callBus("RequestName", [.string(name), .uint32(doNotQueue | replace)])
        let result = try reply.decode(UInt32.self)
        // 1: became the primary owner, 4: already the owner.
        guard result == 1 || result == 4 else {
            throw DBusError(name: .failed, message: "the bus name \(name) is owned by another connection")
        }
    }

    /// Gives up a well-known bus name taken with ``requestName(_:replaceExisting:)``.
    func releaseName(_ name: String) async throws {
        _ = try await callBus("ReleaseName", [.string(name)])
    }

    /// The number of calls waiting for a reply (for tests).
    var pendingCallCount: Int { pendingReplies.count }

    /// How many watch and timer dispatch sources the connection's event loop has created (for
    /// tests and measurements); read on the connection's queue, where the loop counts them.
    var createdSourceCounts: (watches: Int, timers: Int) {
        (loop.createdWatchSourceCount, loop.createdTimerSourceCount)
    }

    /// How many times libdbus added or toggled one of the connection's watches (for measurements).
    var watchUpdateCount: Int { loop.watchUpdateCount }
}
#endif
