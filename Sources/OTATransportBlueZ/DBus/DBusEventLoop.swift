#if os(Linux)
import Dispatch

/// Runs libdbus's I/O for one connection on the connection's queue: watches become dispatch
/// sources, timeouts become dispatch timers, and incoming messages are dispatched as they arrive.
///
/// It owns the libdbus connection (one reference), and hands every incoming message to its
/// ``owner`` through the message filter.
final class DBusEventLoop: @unchecked Sendable {
    // @unchecked: all mutable state is touched only on `queue`: from libdbus callbacks (which run
    // inside libdbus calls made on the queue), from dispatch sources that target the queue, and
    // from the connection actor, whose executor is the queue. Other threads only keep a reference
    // and schedule `close()` onto the queue.

    /// The libdbus connection (DBusConnection*); valid until ``close()``.
    let connection: OpaquePointer
    /// The queue on which everything here runs.
    let queue: DispatchQueue
    /// The unique name the bus gave the connection.
    let uniqueName: String
    /// Whether the connection can carry Unix file descriptors.
    let canPassFileDescriptors: Bool

    /// The connection that receives incoming messages.
    private weak var owner: DBusConnection?
    private var watchSources: [OpaquePointer: WatchSources] = [:]
    private var timerSources: [OpaquePointer: any DispatchSourceTimer] = [:]
    private var isInstalled = false
    private var isDispatching = false
    private var isDispatchScheduled = false
    /// Whether ``close()`` was called; no libdbus call may be made afterwards.
    private(set) var isClosed = false

    private init(connection: OpaquePointer, queue: DispatchQueue) {
        self.connection = connection
        self.queue = queue
        uniqueName = DBusCalls.uniqueName(connection)
        canPassFileDescriptors = DBusCalls.canPassFileDescriptors(connection)
    }

    /// Connects to a bus. Blocks while connecting: call it on the connection's queue.
    static func open(_ bus: DBusConnection.Bus, queue: DispatchQueue) throws -> DBusEventLoop {
        let connection =
            switch bus {
            case .system: try DBusCalls.openBus(system: true)
            case .session: try DBusCalls.openBus(system: false)
            case .address(let address): try DBusCalls.openBus(address: address)
            }
        return DBusEventLoop(connection: connection, queue: queue)
    }

    /// The loop behind a libdbus user-data pointer.
    static func from(_ data: UnsafeMutableRawPointer?) -> DBusEventLoop {
        Unmanaged<DBusEventLoop>.fromOpaque(data!).takeUnretainedValue()
    }

    /// Starts watching the connection and delivering its messages to `owner`.
    func start(owner: DBusConnection) throws {
        self.owner = owner
        guard DBusCalls.install(self) else {
            throw DBusError(name: .noMemory, message: "out of memory while setting up the D-Bus connection")
        }
        isInstalled = true
        scheduleDispatch()
    }

    /// Closes the connection and releases it; idempotent.
    ///
    /// Called from inside a dispatch (a message handler), the release waits until the dispatch
    /// returns.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        if isDispatching {
            queue.async { self.release() }
        } else {
            release()
        }
    }

    private func release() {
        if isInstalled { DBusCalls.uninstall(self) }
        for entry in watchSources.values { cancel(entry) }
        for timer in timerSources.values { timer.cancel() }
        watchSources = [:]
        timerSources = [:]
        DBusCalls.closeAndRelease(connection)
    }

    // MARK: - Dispatching

    /// Dispatches queued messages soon, from a fresh queue turn.
    func scheduleDispatch() {
        guard !isDispatchScheduled, !isClosed else { return }
        isDispatchScheduled = true
        queue.async {
            self.isDispatchScheduled = false
            self.dispatchAll()
        }
    }

    /// Dispatches every queued message; never re-entered.
    private func dispatchAll() {
        guard !isClosed, !isDispatching else { return }
        isDispatching = true
        defer { isDispatching = false }
        while !isClosed, DBusCalls.dispatch(connection) {}
    }

    /// The message filter: hands a message to the owner; returns whether it was handled.
    func handle(_ message: OpaquePointer) -> Bool {
        guard !isClosed, let owner, let decoded = try? DBusMessage(decoding: message) else { return false }
        return owner.assumeIsolated { $0.receive(decoded) }
    }

    // MARK: - Watches

    /// The dispatch sources of one libdbus watch, kept for the watch's whole life.
    ///
    /// libdbus toggles a watch on and off far more often than it adds one (the write watch on
    /// every outgoing message), so a toggle only suspends or resumes the sources; they are
    /// cancelled when libdbus removes the watch. Invariant: the sources are suspended exactly
    /// once when `isSuspended`, never otherwise, because libdispatch traps on a resume without a
    /// matching suspend and on releasing a suspended source.
    private struct WatchSources {
        let readable: Bool
        let writable: Bool
        let sources: [any DispatchSourceProtocol]
        var isSuspended = false
    }

    /// The number of watch dispatch sources created so far (for tests and measurements).
    private(set) var createdWatchSourceCount = 0
    /// The number of times libdbus added or toggled a watch (for tests and measurements).
    private(set) var watchUpdateCount = 0
    /// The number of timer dispatch sources created so far (for tests and measurements).
    private(set) var createdTimerSourceCount = 0

    func addWatch(_ watch: OpaquePointer) -> Bool {
        updateWatch(watch)
        return watchSources[watch] != nil || !DBusCalls.watchInterest(watch).enabled
    }

    func removeWatch(_ watch: OpaquePointer) {
        guard let entry = watchSources.removeValue(forKey: watch) else { return }
        cancel(entry)
    }

    func updateWatch(_ watch: OpaquePointer) {
        watchUpdateCount += 1
        let interest = DBusCalls.watchInterest(watch)
        if var entry = watchSources[watch], entry.readable == interest.readable, entry.writable == interest.writable {
            guard entry.isSuspended == interest.enabled else { return }
            for source in entry.sources {
                if interest.enabled { source.resume() } else { source.suspend() }
            }
            entry.isSuspended = !interest.enabled
            watchSources[watch] = entry
            return
        }
        removeWatch(watch)
        guard interest.enabled else { return }
        let descriptor = DBusCalls.watchDescriptor(watch)
        var sources: [any DispatchSourceProtocol] = []
        for readable in [true, false] where readable ? interest.readable : interest.writable {
            guard let source = makeSource(watching: descriptor, readable: readable, for: watch) else {
                for source in sources { source.cancel() }
                return
            }
            sources.append(source)
        }
        watchSources[watch] = WatchSources(readable: interest.readable, writable: interest.writable, sources: sources)
    }

    /// Cancels a watch's sources, resuming them first if they are suspended.
    private func cancel(_ entry: WatchSources) {
        for source in entry.sources {
            if entry.isSuspended { source.resume() }
            source.cancel()
        }
    }

    private func makeSource(
        watching descriptor: Int32,
        readable: Bool,
        for watch: OpaquePointer
    ) -> (any DispatchSourceProtocol)? {
        // The source watches a duplicate that it closes once cancelled: libdbus closes its own
        // descriptor right after removing the watch, before libdispatch has unregistered the
        // source, and the number could meanwhile be reused by another connection.
        let duplicate = duplicateDescriptor(descriptor)
        guard duplicate >= 0 else { return nil }
        let source: any DispatchSourceProtocol =
            readable
            ? DispatchSource.makeReadSource(fileDescriptor: duplicate, queue: queue)
            : DispatchSource.makeWriteSource(fileDescriptor: duplicate, queue: queue)
        source.setEventHandler { [weak self] in
            guard let self, !self.isClosed, self.watchSources[watch]?.isSuspended == false else { return }
            DBusCalls.handleWatch(watch, readable: readable)
            self.dispatchAll()
        }
        source.setCancelHandler { closeDescriptor(duplicate) }
        source.resume()
        createdWatchSourceCount += 1
        return source
    }

    // MARK: - Timeouts

    func addTimeout(_ timeout: OpaquePointer) -> Bool {
        updateTimeout(timeout)
        return true
    }

    func removeTimeout(_ timeout: OpaquePointer) {
        timerSources.removeValue(forKey: timeout)?.cancel()
    }

    func updateTimeout(_ timeout: OpaquePointer) {
        removeTimeout(timeout)
        guard let interval = DBusCalls.timeoutInterval(timeout) else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(Int(interval)), repeating: .milliseconds(Int(interval)))
        timer.setEventHandler { [weak self] in
            guard let self, !self.isClosed, self.timerSources[timeout] != nil else { return }
            DBusCalls.handleTimeout(timeout)
            self.dispatchAll()
        }
        timer.resume()
        createdTimerSourceCount += 1
        timerSources[timeout] = timer
    }
}
#endif
