import Foundation
import OTACore
import Synchronization

/// A connected link to a ``SimulatedDevice``: the ``Transport`` the engine uses, and the
/// ``PeripheralContext`` the device model sees.
///
/// Writes without response wait for room in the central's queue of ``LinkProfile/writeQueueDepth``
/// writes; connection events drain it into the device. A write with response or a read waits
/// for the device's answer to come back over the link. See ``LinkProfile`` for the radio model.
public final class SimulatedConnection: Transport, NotificationPushing, ImmediateWriting, ImmediateRequesting, RunningAhead,
    PeripheralContext, @unchecked Sendable
{
    // @unchecked: every mutable field is guarded by `lock`. The lock is recursive because the
    // device model runs inside a connection event and calls back into the link (`notify`)
    // (``RecursiveLock``).

    private enum CentralKind {
        case command
        case request(UInt64)
        case read(UInt64)
    }

    private struct CentralPDU {
        var kind: CentralKind
        var characteristic: CharacteristicID
        var value: Data
        var remaining: Int
        var started = false

        /// What a sent PDU leaves in its queue's slot: nothing to release.
        var vacant: CentralPDU { CentralPDU(kind: .command, characteristic: characteristic, value: Data(), remaining: 0) }
    }

    private enum PeripheralKind {
        case notification
        case writeResponse
        case readResponse
    }

    /// A PDU on its way from the device: one flat struct, its kind a plain tag. An enum with
    /// payloads (a `Data` among them), or an optional of a struct holding one, is copied,
    /// checked for `nil` and destroyed through the runtime's value witnesses (about 800
    /// instructions per esp-ble-ota write); this is copied and destroyed inline.
    private struct PeripheralPDU {
        var kind: PeripheralKind
        /// The request a response answers.
        var request: UInt64 = 0
        /// A response's status: `.success`, or the ATT error the device answered with.
        var status = ATTStatus(rawValue: SimulatedConnection.success)
        /// A notification's characteristic.
        var characteristic: CharacteristicID?
        /// A notification's value, or what a read answered.
        var value = Data()
        /// Attoseconds, like every time the radio computes (see `LinkClock`): when the device
        /// may send it, and once sent, when it reaches the central.
        var readyAt: Int128
        var remaining: Int
        /// Once sent: the place its delivery's timer took among timers due at the same instant.
        var deliveryTimer: UInt64 = 0

        /// What a sent PDU leaves in its queue's slot: nothing to release.
        static var vacant: PeripheralPDU { PeripheralPDU(kind: .notification, readyAt: 0, remaining: 0) }

        /// The value, taken out (the PDU keeps an empty one). Reading `value` off a PDU the
        /// caller is done with copied the whole PDU first, then destroyed it.
        mutating func takeValue() -> Data {
            var taken = Data()
            swap(&taken, &value)
            return taken
        }

        // Each `remaining` counts the ATT PDU (opcode, handle, value; an error response is 5
        // bytes) and the L2CAP header (4); `readyAt` is set when the PDU is queued.

        static func notification(_ characteristic: CharacteristicID, _ value: Data) -> PeripheralPDU {
            PeripheralPDU(kind: .notification, characteristic: characteristic, value: value, readyAt: 0, remaining: value.count + 3 + 4)
        }

        static func writeResponse(_ request: UInt64, _ status: ATTStatus) -> PeripheralPDU {
            let length = status.rawValue == SimulatedConnection.success ? 1 : 5
            return PeripheralPDU(kind: .writeResponse, request: request, status: status, readyAt: 0, remaining: length + 4)
        }

        static func readResponse(_ request: UInt64, _ result: Result<Data, ATTStatus>) -> PeripheralPDU {
            switch result {
            case .success(let value):
                PeripheralPDU(kind: .readResponse, request: request, value: value, readyAt: 0, remaining: value.count + 1 + 4)
            case .failure(let status):
                PeripheralPDU(kind: .readResponse, request: request, status: status, readyAt: 0, remaining: 5 + 4)
            }
        }
    }

    /// What a waiting task gets: the device's value (a read's; empty for a write), or why not.
    ///
    /// Not a `Result`: a generic enum's copies and destroys go through the runtime's value
    /// witnesses for its instance (about 400 instructions per esp-ble-ota write), a non-generic
    /// one's are inline.
    private enum Answer: Sendable {
        case value(Data)
        case failure(TransportError)

        /// The value, or the failure thrown.
        func get() throws(TransportError) -> Data {
            switch self {
            case .value(let value): value
            case .failure(let error): throw error
            }
        }
    }

    /// A task waiting for the link's answer, in one of its tables (`blockedWriters`,
    /// `pendingReplies`): its continuation, `nil` while it runs the link ahead on its own task
    /// (its answer then goes to `wokenAhead` or `answeredAhead` for it to take).
    private protocol Waiting {
        var id: UInt64 { get }
        var continuation: UnsafeContinuation<Answer, Never>? { get set }
    }

    private struct BlockedWriter: Waiting {
        var id: UInt64
        var characteristic: CharacteristicID
        var value: Data
        var continuation: UnsafeContinuation<Answer, Never>?
    }

    private struct PendingRequest: Waiting {
        var id: UInt64
        var continuation: UnsafeContinuation<Answer, Never>?
    }

    private let lock = RecursiveLock()
    private let device: SimulatedDevice
    /// The device's model and flash, held here too: reached through `device` each was retained
    /// and released around every use (a few atomic operations per packet).
    private let model: any DeviceModel
    private let deviceFlash: SimulatedFlash
    // Unowned for the same reason as SimulatedDevice.simulation.
    private unowned let simulation: Simulation
    /// The simulation's executor, held strongly (it holds no link): the clock read and the timers
    /// set at every event and reply go to it without an unowned reference's retain-if-alive.
    private let executor: VirtualTimeExecutor
    /// The simulation's random source, held strongly for the same reason.
    private let random: SimulationRandom
    private let profile: LinkProfile
    @exclusivity(unchecked) private var clock: LinkClock
    /// The adapter whose radio and connection slot this link uses, with its slot.
    private let adapter: (adapter: SimulatedAdapter, slot: UInt64)?
    /// What to do with a write that ignores back-pressure when the queue is full.
    public let overflow: WriteQueueOverflow
    public let link: LinkParameters
    public let characteristics: [CharacteristicID: CharacteristicProperties]

    // The mutable state below is all guarded by `lock`, so the runtime's exclusivity checks (a
    // `swift_beginAccess` per access to a stored property of a class, a dozen per write) find
    // nothing the lock does not already rule out: they are turned off for these properties.
    // The device model calls back into the link while `runEvent` is in a loop, which is why
    // the state is in properties accessed one at a time, not one struct held `inout`.

    /// The watchers of ``disconnections``, and why the link went down.
    @exclusivity(unchecked) private var disconnectWatchers = DisconnectionWatchers()
    private var disconnectReason: DisconnectReason? { disconnectWatchers.reason }
    /// The central's PDUs in order from `centralHead`; those before it were sent and moved out
    /// (leaving a vacant PDU), so that handing one to the device copies and releases nothing.
    @exclusivity(unchecked) private var central: [CentralPDU] = []
    @exclusivity(unchecked) private var centralHead = 0
    @exclusivity(unchecked) private var commandsQueued = 0
    /// The peripheral's PDUs in order from `peripheralHead`, as `central`: those before it were
    /// sent and moved out, so that sending one shifts, copies and releases nothing.
    @exclusivity(unchecked) private var peripheral: [PeripheralPDU] = []
    @exclusivity(unchecked) private var peripheralHead = 0
    @exclusivity(unchecked) private var blockedWriters: [BlockedWriter] = []
    /// Writers woken (their command queued, or the link down) while they ran the link ahead,
    /// with the outcome each takes.
    @exclusivity(unchecked) private var wokenAhead: [(id: UInt64, answer: Answer)] = []
    /// Requests answered (or the link down) while they ran the link ahead, with the answer each
    /// takes.
    @exclusivity(unchecked) private var answeredAhead: [(id: UInt64, answer: Answer)] = []
    /// Whether `wokenAhead` or `answeredAhead` may hold something: set under the lock with each
    /// entry, so that a task running the link ahead checks for its answer after each timer
    /// without the lock while none came.
    private let answersAhead = Atomic<Bool>(false)
    /// Requests and reads waiting for their answer, in the order sent: a short list (ATT has
    /// one request out at a time), searched rather than hashed.
    @exclusivity(unchecked) private var pendingReplies: [PendingRequest] = []
    @exclusivity(unchecked) private var subscriptions: [CharacteristicID: (id: UInt64, subscriber: NotificationSubscriber)] = [:]
    /// The characteristic of the subscription found last, and its subscriber (``lastSubscriber``,
    /// the last stored property), kept beside `subscriptions` (``subscriber(of:)``): a device
    /// notifies on one or two characteristics, and hashing a characteristic's two UUIDs cost more
    /// than the rest of a notification's bookkeeping. Cleared whenever `subscriptions` changes.
    @exclusivity(unchecked) private var lastSubscribed: CharacteristicID?
    @exclusivity(unchecked) private var eventScheduled: Int128?
    @exclusivity(unchecked) private var lastEvent: Int128?
    @exclusivity(unchecked) private var lastID: UInt64 = 0
    @exclusivity(unchecked) private var statistics = LinkStatistics()
    @exclusivity(unchecked) private var deliveryTime: Int128 = 0
    /// Virtual time while a connection event runs (the executor's clock, read once per event).
    @exclusivity(unchecked) private var eventNow: Int128?
    /// The device's busy time as the last settling here returned it: while the flash's change
    /// count has not moved since (nothing erased, wrote, settled or reset it: a model call that
    /// kept its bytes in RAM, as most esp-ble-ota packets do), a packet's flow-control check
    /// settles from it without the flash's lock. `nil` when unknown.
    @exclusivity(unchecked) private var knownBusy: Int128?
    /// The flash's change count when `knownBusy` was settled through it: a check that finds the
    /// count moved (a reboot, a model's or a test's use of the flash) settles through the flash.
    @exclusivity(unchecked) private var knownChanges: UInt64 = 0
    /// A settling done from `knownBusy` that the flash has not seen yet: the next settling
    /// through the flash (or the link going down) folds it in first.
    @exclusivity(unchecked) private var busyFloor: Int128?
    /// PDUs on their way to the central, in the order their timers fire (a link's deliveries are
    /// scheduled at times that never go back), so that every timer calls one closure made once.
    @exclusivity(unchecked) private var toCentral: [PeripheralPDU] = []
    @exclusivity(unchecked) private var toCentralHead = 0
    /// How many of `toCentral`'s last PDUs the running event sent, their timers not set yet.
    @exclusivity(unchecked) private var deliveriesToSet = 0
    /// Suspended tasks to resume with their answers once the lock is released
    /// (``resumeAfterUnlock(_:with:)``).
    @exclusivity(unchecked) private var toResume: [(UnsafeContinuation<Answer, Never>, Answer)] = []
    /// The place the next event's timer took, asked for while an event ran and not set yet; 0
    /// (no place yet, IDs start at 1) for a request's first event, whose place is taken only if
    /// it is not taken at once (`startRequest`).
    @exclusivity(unchecked) private var eventTimerToSet: UInt64?
    /// The timers' calls, made once (each `schedule` of a fresh closure allocated a context);
    /// `nil` once the link is down.
    @exclusivity(unchecked) private var eventCall: (@Sendable () -> Void)?
    @exclusivity(unchecked) private var deliveryCall: (@Sendable () -> Void)?
    /// The characteristic the last write without response went to, already checked.
    @exclusivity(unchecked) private var lastUnacknowledgedTarget: CharacteristicID?
    /// The characteristic the last write with response went to, already checked.
    @exclusivity(unchecked) private var lastAcknowledgedTarget: CharacteristicID?
    /// When ``lastSubscriber`` is a receiver (``NotificationSubscriber/push(_:)``), its `receive`:
    /// a notification is handed to it without copying the subscriber out, which (its layout
    /// unknown at compile time, see ``lastSubscriber``) went through the enum's value witnesses,
    /// copying, switching over and destroying it at every notification.
    @exclusivity(unchecked) private var lastReceive: (@Sendable (Data) -> Void)?
    /// ``lastSubscribed``'s subscriber. Last of the stored properties: its size is not known when
    /// this module is compiled (`AsyncStream.Continuation` is a resilient type of the standard
    /// library), so every property after it had its offset loaded from a global at each use, not
    /// written into the code (about fifteen loads, and their spills, per connection event).
    @exclusivity(unchecked) private var lastSubscriber: NotificationSubscriber?

    init(
        device: SimulatedDevice, simulation: Simulation, centralMTU: Int, overflow: WriteQueueOverflow,
        adapter: (adapter: SimulatedAdapter, slot: UInt64)? = nil
    ) {
        self.device = device
        self.model = device.model
        self.deviceFlash = device.flash
        self.adapter = adapter
        self.simulation = simulation
        self.executor = simulation.executor
        self.random = simulation.random
        self.profile = device.profile.link
        self.clock = LinkClock(anchor: simulation.now, link: device.profile.link, device: device.profile)
        self.overflow = overflow
        let mtu = max(23, min(centralMTU, profile.deviceMaximumMTU))
        link = LinkParameters(
            attMTU: mtu,
            maximumWriteWithoutResponse: mtu - 3,
            maximumWriteWithResponse: mtu - 3,
            summary: device.profile.link.summary
        )
        var table = device.standardCharacteristics
        for service in device.model.services {
            table.merge(service.characteristicTable) { $1 }
        }
        characteristics = table
        // Strong references, a cycle that `drop(_:)` breaks (as the device's own reference to
        // its connection is one until then): a weak one gave the link a side table, which sent
        // every retain and release of it down the runtime's slow path, besides loading the weak
        // reference at every event and every reply. A timer still set when the link drops keeps
        // it until it fires, and then finds it down.
        eventCall = { self.connectionEvent() }
        deliveryCall = { self.deliverNextToCentral() }
        adapter?.adapter.bind(adapter!.slot, to: self)
    }

    private func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { unlock() }
        return try body()
    }

    /// Releases the link's lock; its outermost holder then resumes the tasks whose answers came
    /// under it (``resumeAfterUnlock(_:with:)``).
    @inline(__always)
    private func unlock() {
        guard !toResume.isEmpty, lock.isHeldOnce else { return lock.unlock() }
        resumeDeferred()
    }

    @inline(never)
    private func resumeDeferred() {
        let resumes = toResume
        toResume = []
        lock.unlock()
        for (continuation, answer) in resumes { continuation.resume(returning: answer) }
    }

    /// Resumes a suspended task with its answer once the link's lock is released, never under it:
    /// a task being cancelled holds its own lock while its cancellation handler waits for the
    /// link's (to withdraw its wait), and resuming the task needs that lock, so resuming it
    /// under the link's lock could leave both waiting for ever. (`ota` did, at a SIGTERM that
    /// came as a connection event woke its blocked writer.) Under the lock.
    private func resumeAfterUnlock(_ continuation: UnsafeContinuation<Answer, Never>, with answer: Answer) {
        toResume.append((continuation, answer))
    }

    /// What the link has carried so far.
    public var stats: LinkStatistics { withLock { statistics } }

    /// Whether the link is up.
    public var isConnected: Bool { withLock { disconnectReason == nil } }

    /// A fresh identifier for a waiting task or a subscription; under the lock.
    private func makeID() -> UInt64 {
        lastID &+= 1
        return lastID
    }

    // MARK: - Transport

    // Inlined into the `Transport` witness the engine calls: a call of its own allocated and
    // freed an async frame per write.
    @inline(__always)
    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        switch kind {
        case .withoutResponse:
            if try writeWithoutResponseIfReady(value, to: characteristic) { return }
            _ = try await waitForRoom(value, to: characteristic).get()
        case .withResponse:
            // The characteristic and the length are checked under the request's own lock.
            _ = try await request(.request, value: value, characteristic: characteristic).get()
        }
    }

    /// Queues a write without response if the queue has room and no writer waits ahead of it;
    /// `false` otherwise (``write(_:to:kind:)`` then waits for room). A link that is down is
    /// `false` too: the wait reports it.
    public func writeWithoutResponseIfReady(_ value: Data, to characteristic: CharacteristicID) throws(TransportError) -> Bool {
        if value.count > link.maximumWriteWithoutResponse { try requireFits(value, in: .withoutResponse) }
        return try withLock { () throws(TransportError) -> Bool in
            // A data stream writes one characteristic: look it up once, not per write (the
            // comparison is cheap when the caller passes the same value every time).
            if lastUnacknowledgedTarget != characteristic {
                try check(characteristic, allows: .writeWithoutResponse)
                lastUnacknowledgedTarget = characteristic
            }
            guard disconnectReason == nil, blockedWriters.isEmpty, commandsQueued < profile.writeQueueDepth else { return false }
            enqueueCommand(value, to: characteristic)
            return true
        }
    }

    public func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        try check(characteristic, allows: .read)
        return try await request(.read, value: Data(), characteristic: characteristic).get()
    }

    /// ``ImmediateRequesting``: the request sent and the link run ahead to its answer, as
    /// ``write(_:to:kind:)`` does before it would suspend; `pending` where it would suspend.
    public func startWriteWithResponse(_ value: Data, to characteristic: CharacteristicID) -> StartedWrite {
        let (answer, id) = startRequest(.request, value: value, characteristic: characteristic)
        switch answer {
        case nil: return .pending(PendingWrite(id: id))
        case .value?: return .answered
        case .failure(let error)?: return .failed(error)
        }
    }

    /// ``ImmediateRequesting``: the rest of ``write(_:to:kind:)``'s wait, suspended until the
    /// answer comes. A write this link does not know as pending fails ("lost track").
    public func awaitAnswer(to write: PendingWrite) async throws(TransportError) {
        _ = try await suspendForAnswer(to: write.id).get()
    }

    public func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        try await NotificationSubscriber.stream { (subscriber) throws(TransportError) in try subscribe(to: characteristic, subscriber) }
    }

    /// Notifications handed to `receiver` as the link delivers them, in the connection event's
    /// context (decision 0066): no stream, no task reading it.
    public func pushNotifications(
        from characteristic: CharacteristicID, to receiver: NotificationReceiver
    ) async throws(TransportError)
        -> NotificationSubscription
    {
        NotificationSubscription(cancel: try subscribe(to: characteristic, .push(receiver)))
    }

    /// Makes `subscriber` the characteristic's one subscription (the one before it, if any,
    /// finishes) and returns what ends it.
    private func subscribe(to characteristic: CharacteristicID, _ subscriber: NotificationSubscriber) throws(TransportError) -> @Sendable () -> Void {
        // Indications reach the app the same way (the stack confirms them).
        if characteristics[characteristic]?.contains(.indicate) != true {
            try check(characteristic, allows: .notify)
        }
        let (id, previous): (UInt64, NotificationSubscriber?) = try withLock { () throws(TransportError) in
            if let reason = disconnectReason { throw TransportError.disconnected(reason) }
            let id = makeID()
            defer {
                subscriptions[characteristic] = (id, subscriber)
                forgetLastSubscription()
            }
            return (id, subscriptions[characteristic]?.subscriber)
        }
        previous?.finish()
        // A strong reference, for the same reason as the timers' (`init`): whoever holds the
        // subscription holds the link.
        return {
            self.withLock {
                if self.subscriptions[characteristic]?.id == id {
                    self.subscriptions[characteristic] = nil
                    self.forgetLastSubscription()
                }
            }
        }
    }

    public var disconnections: AsyncStream<DisconnectReason> {
        withLock { disconnectWatchers.watch() }
    }

    /// Fires the simulation's timers on the calling task until `answered()` holds, none due
    /// `limit` or more from now (``VirtualTimeExecutor/runAhead(before:forAnswer:until:)``): the link's
    /// events and deliveries, and whatever else the run loop would fire next.
    public func runAhead(for limit: Duration, until answered: () -> Bool) -> Bool {
        executor.runAhead(before: executor.now + limit, until: answered)
    }

    public func disconnect() async {
        drop(.closedByApp)
    }

    /// Writes without waiting for room in the queue, as a naive client that ignores
    /// `canSendWriteWithoutResponse` does. When the queue is full the write is dropped without
    /// a word or refused, as ``overflow`` says.
    ///
    /// This exists to prove that the simulator reproduces the back-pressure bug; the engine never
    /// calls it.
    public func writeIgnoringFlowControl(_ value: Data, to characteristic: CharacteristicID) throws(TransportError) {
        try requireWritable(value, to: characteristic, kind: .withoutResponse)
        try withLock { () throws(TransportError) in
            if let reason = disconnectReason { throw TransportError.disconnected(reason) }
            if commandsQueued < profile.writeQueueDepth {
                enqueueCommand(value, to: characteristic)
                return
            }
            switch overflow {
            case .dropSilently:
                statistics.writesDropped += 1
            case .reject:
                throw TransportError(.other, "write without response refused: the queue of \(profile.writeQueueDepth) writes is full")
            }
        }
    }

    // MARK: - Validation

    private func check(_ characteristic: CharacteristicID, allows property: CharacteristicProperties) throws(TransportError) {
        try requireCharacteristic(characteristic, allowing: property)
    }

    // MARK: - Central side

    private func pduLength(_ value: Int) -> Int { value + 3 + 4 }

    private func enqueueCommand(_ value: Data, to characteristic: CharacteristicID) {
        central.append(CentralPDU(kind: .command, characteristic: characteristic, value: value, remaining: pduLength(value.count)))
        commandsQueued += 1
        statistics.writesQueued += 1
        scheduleEvent()
    }

    private func waitForRoom(_ value: Data, to characteristic: CharacteristicID) async -> Answer {
        let (id, refused): (UInt64, Answer?) = withLock {
            if let refusal { return (0, .failure(refusal)) }
            let id = makeID()
            statistics.writerWaits += 1
            blockedWriters.append(BlockedWriter(id: id, characteristic: characteristic, value: value, continuation: nil))
            return (id, nil)
        }
        if let refused { return refused }
        return await awaitAnswer {
            Self.take(id, from: &wokenAhead)
        } file: {
            Self.file($0, for: id, in: &blockedWriters)
        } withdraw: {
            Self.withdraw(id, from: &blockedWriters)
        }
    }

    /// Waits for the answer to something the caller filed under the lock (a request, a blocked
    /// write), which only the link's timers bring: its connection events, the device's reply,
    /// the delivery.
    ///
    /// First it runs those timers itself (``VirtualTimeExecutor/runAhead(before:forAnswer:until:)``): when nothing
    /// else is runnable the answer comes at the same virtual time and in the same order as if the
    /// task had suspended, without the suspension, its task switches and its cancellation
    /// handler (decision 0069). Otherwise it suspends until the answer comes.
    ///
    /// Each closure runs under the lock: `take` takes the answer out if it came (``take(_:from:)``); `file` puts
    /// the continuation in the caller's entry (or, given `nil`, removes the entry: the task was
    /// cancelled first) and returns `false` when the entry is gone; `withdraw` takes the
    /// continuation back out, if nobody answered yet, to answer "cancelled". The continuations
    /// are unchecked (a checked one allocates and frees a canary each time): each is resumed
    /// exactly once because whoever resumes it (this function, the radio, `withdraw`,
    /// ``drop(_:)``) first takes it out of its table under the lock.
    // Inlined into its two callers so that their closures are too (about 200 instructions per
    // esp-ble-ota write otherwise).
    @inline(__always)
    private func awaitAnswer(
        take: () -> Answer?,
        file: (UnsafeContinuation<Answer, Never>?) -> Bool,
        withdraw: @Sendable () -> UnsafeContinuation<Answer, Never>?
    ) async -> Answer {
        if let answer = runAheadForAnswer(take: take) { return answer }
        return await suspendForAnswer(take: take, file: file, withdraw: withdraw)
    }

    /// ``awaitAnswer(take:file:withdraw:)``'s first part: the link run ahead on the calling task
    /// until `take` finds the answer; `nil` when it must be waited for.
    @inline(__always)
    private func runAheadForAnswer(take: () -> Answer?) -> Answer? {
        var answer: Answer?
        // A cancellation from another thread meanwhile is noticed at the answer (virtual time
        // runs on to it at once) or, if none comes, when the suspension below is entered; the
        // run's own limits are timers that resume a task, which stops running ahead. Only an
        // answer kept here (`answersAhead`) ends the run, so the link's events may take their
        // next steps at once while none is kept (`forAnswer`, decision 0073).
        let answered = executor.runAhead(forAnswer: true) {
            guard answersAhead.load(ordering: .acquiring) else { return false }
            answer = withLock { takeAnswer(take) }
            return answer != nil
        }
        return answered ? answer : nil
    }

    /// ``awaitAnswer(take:file:withdraw:)``'s second part: suspends until the answer comes,
    /// unless it came meanwhile.
    @inline(__always)
    private func suspendForAnswer(
        take: () -> Answer?,
        file: (UnsafeContinuation<Answer, Never>?) -> Bool,
        withdraw: @Sendable () -> UnsafeContinuation<Answer, Never>?
    ) async -> Answer {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Answer, Never>) in
                let immediate: Answer? = withLock {
                    if let answer = takeAnswer(take) { return answer }
                    if Task.isCancelled { return file(nil) ? .failure(Self.cancelled) : .failure(Self.lost) }
                    return file(continuation) ? nil : .failure(Self.lost)
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let continuation = withLock(withdraw)
            continuation?.resume(returning: .failure(Self.cancelled))
        }
    }

    private static let cancelled = TransportError(.other, "cancelled")

    /// Why a wait cannot start: the link is down or the task cancelled. Under the lock.
    ///
    /// `Task.isCancelled`, not `withUnsafeCurrentTask { $0?.isCancelled }`: that function is
    /// generic and not inlinable, so its unspecialized body ran on every request (metadata, a
    /// closure call, and a retain and release of the task all the same): about 265 instructions
    /// per esp-ble-ota write more than the plain property.
    private var refusal: TransportError? {
        if let reason = disconnectReason { return .disconnected(reason) }
        return Task.isCancelled ? Self.cancelled : nil
    }

    private enum RequestKind { case request, read }

    /// Sends a request (or read) and returns the device's answer (``awaitAnswer(take:file:withdraw:)``).
    /// A write's characteristic and length are checked first, under the same lock.
    // Inlined into `write` and `read`: a call of its own allocated and freed an async frame
    // (about 140 instructions per esp-ble-ota write).
    @inline(__always)
    private func request(_ kind: RequestKind, value: Data, characteristic: CharacteristicID) async -> Answer {
        let (answer, id) = startRequest(kind, value: value, characteristic: characteristic)
        if let answer { return answer }
        return await suspendForAnswer(to: id)
    }

    /// Suspends until request `id` is answered (``suspendForAnswer(take:file:withdraw:)``).
    @inline(__always)
    private func suspendForAnswer(to id: UInt64) async -> Answer {
        await suspendForAnswer {
            Self.take(id, from: &answeredAhead)
        } file: {
            Self.file($0, for: id, in: &pendingReplies)
        } withdraw: {
            Self.withdraw(id, from: &pendingReplies)
        }
    }

    /// The part of a request that needs no suspension: checks and sends it, and runs the link
    /// ahead for its answer (``runAheadForAnswer(take:)``). Returns the answer if it came (or
    /// why the request was refused), `nil` with the request's id otherwise.
    @inline(__always)
    private func startRequest(_ kind: RequestKind, value: Data, characteristic: CharacteristicID) -> (Answer?, UInt64) {
        lock.lock()
        if kind == .request {
            // As for writes without response (`writeWithoutResponseIfReady`): a stream of
            // writes with response (esp-ble-ota's packets) goes to one characteristic,
            // checked once rather than hashed per write.
            do throws(TransportError) {
                if lastAcknowledgedTarget != characteristic {
                    try check(characteristic, allows: .write)
                    lastAcknowledgedTarget = characteristic
                }
                if value.count > link.maximumWriteWithResponse { try requireFits(value, in: .withResponse) }
            } catch {
                unlock()
                return (.failure(error), 0)
            }
        }
        if let refusal {
            unlock()
            return (.failure(refusal), 0)
        }
        let id = makeID()
        pendingReplies.append(PendingRequest(id: id))
        let centralKind: CentralKind = kind == .request ? .request(id) : .read(id)
        central.append(CentralPDU(kind: centralKind, characteristic: characteristic, value: value, remaining: pduLength(value.count)))
        scheduleEvent(deferring: true)
        // The event that carries it, if it is the one to set: the wait's first step. When it is
        // the run loop's next step it runs here, still under the lock (the event's own take of
        // it is a nested one), and the answer it may bring is taken in the same round;
        // otherwise it is set, after the lock, as any timer. Nothing can have answered before
        // the event: the lock was held since the request was queued.
        var first = VirtualTimeExecutor.ReservedTimer.none
        if let timer = eventTimerToSet, let time = eventScheduled {
            eventTimerToSet = nil
            if executor.takeFirstStepAhead(at: time, { connectionEvent() }) {
                if answersAhead.load(ordering: .acquiring), let answer = takeAnswer({ Self.take(id, from: &answeredAhead) }) {
                    unlock()
                    return (answer, id)
                }
            } else {
                // Its place taken now: on this thread nothing took one since the request was
                // queued (the lock is held, and the attempt above fired nothing; another thread's
                // timers race with it either way), so it is the place it would have taken then,
                // without an atomic add for the requests whose event is taken at once.
                first = .init(deadline: time, id: timer == 0 ? executor.reserveTimerID() : timer, call: Self.call(eventCall))
            }
        }
        unlock()
        if first.call != nil { executor.schedule(first) }
        return (runAheadForAnswer { Self.take(id, from: &answeredAhead) }, id)
    }

    private static let lost = TransportError(.other, "the simulated link lost track of a waiting write")

    /// Hands request `id` its answer: sets `resume` to its continuation and `answer` to `reply`
    /// (for the caller to resume outside the lock) if its task is suspended, or keeps the answer
    /// for it if it runs the link ahead. `reply` is moved once, never copied.
    @inline(__always)
    private func answer(
        _ id: UInt64, with reply: consuming Answer, resuming resume: inout UnsafeContinuation<Answer, Never>?, with answer: inout Answer?
    ) {
        guard let index = pendingReplies.firstIndex(where: { $0.id == id }) else { return }
        // Nearly always the only request out (ATT has one at a time): `removeLast` shifts nothing.
        let entry = index == pendingReplies.count - 1 ? pendingReplies.removeLast() : pendingReplies.remove(at: index)
        if let continuation = entry.continuation {
            resume = continuation
            answer = reply
        } else {
            keepAhead(answer: reply, for: id)
        }
    }

    /// `take()`, and `answersAhead` cleared once it took the last answer kept for a task
    /// running ahead; under the lock.
    private func takeAnswer(_ take: () -> Answer?) -> Answer? {
        guard let answer = take() else { return nil }
        if wokenAhead.isEmpty && answeredAhead.isEmpty { answersAhead.store(false, ordering: .relaxed) }
        return answer
    }

    /// The answer kept for `id` in `kept`, taken out, if it came.
    private static func take(_ id: UInt64, from kept: inout [(id: UInt64, answer: Answer)]) -> Answer? {
        // Nearly always one answer is kept: the one asked for.
        if kept.count == 1 { return kept[0].id == id ? kept.removeLast().answer : nil }
        guard let index = kept.firstIndex(where: { $0.id == id }) else { return nil }
        // The order of what is kept does not matter (each is found by its id): the last one
        // takes the gap, and nothing is copied or shifted.
        if index != kept.count - 1 { kept.swapAt(index, kept.count - 1) }
        return kept.removeLast().answer
    }

    /// Puts `continuation` in entry `id` of `table`, or with `nil` removes the entry; `false` when
    /// the entry is gone.
    private static func file<Entry: Waiting>(
        _ continuation: UnsafeContinuation<Answer, Never>?, for id: UInt64, in table: inout [Entry]
    ) -> Bool {
        guard let index = table.firstIndex(where: { $0.id == id }) else { return false }
        if let continuation {
            table[index].continuation = continuation
        } else {
            table.remove(at: index)
        }
        return true
    }

    /// Takes entry `id`'s continuation out of `table`, with the entry, if its task is suspended.
    private static func withdraw<Entry: Waiting>(_ id: UInt64, from table: inout [Entry]) -> UnsafeContinuation<Answer, Never>? {
        guard let index = table.firstIndex(where: { $0.id == id }), table[index].continuation != nil else { return nil }
        return table.remove(at: index).continuation
    }

    /// Keeps `answer` for request `id`, which runs the link ahead.
    private func keepAhead(answer: consuming Answer, for id: UInt64) {
        answeredAhead.append((id, answer))
        answersAhead.store(true, ordering: .releasing)
    }

    // MARK: - Radio

    /// Schedules the next connection event if there is work and none is scheduled.
    ///
    /// Inside an event the timer is not set: its place is reserved in `eventTimerToSet`, and it is
    /// set (or the event taken at once) later, by `setTimers`. With `deferring` (a request that
    /// runs the link ahead next, under the same lock) not even its place is taken: `eventTimerToSet`
    /// is 0, and the request takes the place only if it does not take the event at once.
    // The checks that most calls end at (an event already scheduled, nothing to send) inlined
    // into the callers, four a write; the rest out of line.
    @inline(__always)
    private func scheduleEvent(deferring: Bool = false) {
        guard eventScheduled == nil, centralHead < central.count || peripheralHead < peripheral.count, disconnectReason == nil
        else { return }
        scheduleNextEvent(deferring: deferring)
    }

    /// ``scheduleEvent(deferring:)`` past its first checks.
    @inline(never)
    private func scheduleNextEvent(deferring: Bool) {
        let hasCentral = centralHead < central.count
        let earliestPeripheral = peripheralHead < peripheral.count ? peripheral[peripheralHead].readyAt : nil
        var earliest = eventNow ?? executor.now.attoseconds
        if !hasCentral, let ready = earliestPeripheral, ready > earliest { earliest = ready }
        if let last = lastEvent, last + LinkClock.nanosecond > earliest { earliest = last + LinkClock.nanosecond }
        // Compared, not bound: binding the closure retains its context, and most events are
        // set later (`setTimers`) or taken at once.
        guard eventCall != nil else { return }
        let time = clock.nextEvent(atOrAfter: earliest)
        eventScheduled = time
        if deferring && eventNow == nil {
            eventTimerToSet = 0
        } else if eventNow != nil {
            eventTimerToSet = executor.reserveTimerID()
        } else {
            executor.schedule(at: Duration(attoseconds: time), eventCall!)
        }
    }

    /// The event timer fired: runs the event, then sets the timers it leaves — or takes the
    /// next step at once when nothing else can come before it (decision 0073): the response it
    /// delivers, or the next event, and so on.
    private func connectionEvent() {
        lock.lock()
        // The one event scheduled (`scheduleEvent` sets no other while this is).
        guard var start = eventScheduled else {
            unlock()
            return
        }
        eventScheduled = nil
        // The task to resume after the lock, and its answer. Two variables, not an optional
        // pair: the pair was destroyed at every event through the runtime's tuple witnesses.
        var resume: UnsafeContinuation<Answer, Never>?
        var reply: Answer?
        // Lent for the events run here at once, one after another: nothing else draws between
        // them (only this link's work runs until the loop ends).
        var random = self.random.lend()
        while disconnectReason == nil {
            lastEvent = start
            eventNow = executor.now.attoseconds
            runEvent(at: start, drawing: &random)
            wakeBlockedWriters()
            scheduleEvent()
            eventNow = nil
            guard let next = setTimers(resuming: &resume, with: &reply) else { break }
            start = next
        }
        self.random.giveBack(random)
        // Taken at once inside a request's first step, the event runs under the request's hold
        // of the lock: its answer waits for that to end.
        if !lock.isHeldOnce, let waiting = resume, let answer = reply.take() {
            resumeAfterUnlock(waiting, with: answer)
            resume = nil
        }
        unlock()
        if let resume, let reply = reply.take() { resume.resume(returning: reply) }
    }

    /// After an event: sets the timers of the deliveries it made and of the next event, in the
    /// places they took while it ran. When one of them is the run loop's very next step
    /// (``VirtualTimeExecutor/advance(toNextStepAt:)``), no answer is kept for a task running
    /// ahead and no task waits to be resumed (``resumeAfterUnlock(_:with:)``: resumed at once, as
    /// it was, it would be a runnable job, which comes first), that step is taken at once
    /// instead: a lone response is delivered (its task's continuation, if it waits suspended,
    /// left in `resume` with its `answer`), or the next event's start is returned for the caller
    /// to run. Under the lock.
    private func setTimers(resuming resume: inout UnsafeContinuation<Answer, Never>?, with answer: inout Answer?) -> Int128? {
        if deliveriesToSet > 0 {
            let first = toCentral.count - deliveriesToSet
            deliveriesToSet = 0
            if first == toCentralHead, first == toCentral.count - 1, toCentral[first].kind != .notification,
                eventTimerToSet == nil || toCentral[first].readyAt < eventScheduled!,
                !answersAhead.load(ordering: .acquiring), toResume.isEmpty,
                executor.advance(toNextStepAt: Duration(attoseconds: toCentral[first].readyAt))
            {
                deliverHeadResponse(resuming: &resume, with: &answer)
            } else {
                // A link that went down meanwhile still sets them, as it did: each fires, moves the
                // clock and finds what it delivers refused or unanswered.
                let call = Self.call(deliveryCall)
                for index in first..<toCentral.count {
                    executor.schedule(.init(deadline: toCentral[index].readyAt, id: toCentral[index].deliveryTimer, call: call))
                }
            }
        }
        guard let id = eventTimerToSet, let time = eventScheduled else { return nil }
        eventTimerToSet = nil
        if resume == nil, toResume.isEmpty, disconnectReason == nil, !answersAhead.load(ordering: .acquiring),
            executor.advance(toNextStepAt: Duration(attoseconds: time))
        {
            eventScheduled = nil
            return time
        }
        executor.schedule(.init(deadline: time, id: id, call: Self.call(eventCall)))
        return nil
    }

    /// `call`, or for a link that went down a call that does nothing. (Not `call ?? nothing`:
    /// `??` is generic, and a closure through it is wrapped in two allocated thunks.)
    private static func call(_ call: (@Sendable () -> Void)?) -> @Sendable () -> Void {
        if let call { return call }
        return {}
    }

    /// Whether the link has packets to send at `time` (for the adapter's airtime sharing).
    func hasAirWork(at time: Duration) -> Bool {
        withLock {
            guard disconnectReason == nil else { return false }
            return centralHead < central.count || (peripheralHead < peripheral.count && peripheral[peripheralHead].readyAt <= time.attoseconds)
        }
    }

    /// One connection event, its packets computed in one pass under the link's lock: times in
    /// attoseconds, drawing from the random source its caller borrowed, the device's busy time settled
    /// through the flash's lock only where flash work can have been added (after a packet
    /// reached the model, and at the start of the event if the flash changed since the last).
    // Inlined into its one caller, `connectionEvent()`'s loop: a call of its own spilled the
    // link's parameters again at every event (about 30 instructions an event).
    @inline(__always)
    private func runEvent(at start: Int128, drawing random: inout SeededRandom) {
        let cap = profile.packetsPerEvent ?? .max
        var share = clock.interval
        var left = clock.interval
        if let adapter {
            let budget = adapter.adapter.eventBudget(for: self, interval: profile.connectionInterval, at: Duration(attoseconds: start))
            share = budget.share.attoseconds
            left = budget.left.attoseconds
        }
        let limit = min(clock.interval, left)
        let llPayload = profile.llPayload
        let errorRate = profile.packetErrorRate
        var used: Int128 = 0
        var packets = 0
        var flowControlled = false
        while packets < cap, disconnectReason == nil {
            let now = start + used
            var centralBytes = 0
            if centralHead < central.count {
                if !central[centralHead].started && isDeviceBackedUp(at: now) {
                    flowControlled = true
                } else {
                    centralBytes = min(central[centralHead].remaining, llPayload)
                }
            }
            var peripheralBytes = 0
            if peripheralHead < peripheral.count, peripheral[peripheralHead].readyAt <= now {
                peripheralBytes = min(peripheral[peripheralHead].remaining, llPayload)
            }
            guard centralBytes > 0 || peripheralBytes > 0 else { break }
            let pair = clock.pairFixed + clock.airPerByte &* Int128(centralBytes + peripheralBytes)
            guard used < share, used + pair <= limit else { break }
            used += pair
            packets += 1
            statistics.packetPairs += 1
            if random.unit() < errorRate {
                statistics.retransmissions += 1
                continue
            }
            if centralBytes > 0 {
                central[centralHead].started = true
                central[centralHead].remaining -= centralBytes
                if central[centralHead].remaining == 0 {
                    let pdu = central.take(centralHead, leaving: central[centralHead].vacant)
                    centralHead += 1
                    Self.compact(&central, head: &centralHead)
                    deliverToDevice(pdu, at: now + clock.airFixed + clock.airPerByte &* Int128(centralBytes))
                }
            }
            // (The device may have dropped the link, emptying the queue.)
            if peripheralBytes > 0, peripheralHead < peripheral.count {
                peripheral[peripheralHead].remaining -= peripheralBytes
                if peripheral[peripheralHead].remaining == 0 {
                    let pdu = peripheral.take(peripheralHead, leaving: .vacant)
                    peripheralHead += 1
                    Self.compact(&peripheral, head: &peripheralHead)
                    deliverToCentral(pdu, at: start + used)
                }
            }
        }
        if packets > 0 { statistics.connectionEvents += 1 }
        if flowControlled { statistics.flowControlStalls += 1 }
        // Not a `defer`: that was a closure called at every event (the loop has no early exit).
        if let adapter { adapter.adapter.charge(Duration(attoseconds: used)) }
    }

    /// Whether the device has so much unfinished work that its controller refuses packets, or
    /// a stall fault holds it; settles the device's busy time at `time` (``settledBusy(at:)``).
    private func isDeviceBackedUp(at time: Int128) -> Bool {
        if device.isStalled { return true }
        return settledBusy(at: time) - time > clock.backlogLimit
    }

    /// The device's busy time settled at `time` as the flash would settle it: from
    /// ``knownBusy``, without the flash's lock, when nothing can have added work since the last
    /// settling (anything that may have used the flash since, a reboot, the model or a test,
    /// moved its change count); otherwise through the flash (``settleDevice(at:)``).
    private func settledBusy(at time: Int128) -> Int128 {
        if let known = knownBusy, deviceFlash.changeCount == knownChanges {
            // What settling at `time` with no work folded in gives and keeps.
            let busy = time > known ? time : known
            knownBusy = busy
            busyFloor = busy
            return busy
        }
        return settleDevice(at: time)
    }

    /// Folds the device's flash work into its busy time at `time` (``SimulatedFlash/settle(attoseconds:notBefore:)``),
    /// with any settling done without the lock first; returns when the device will be idle.
    private func settleDevice(at time: Int128) -> Int128 {
        let (busy, changes) = deviceFlash.settleCounting(attoseconds: time, notBefore: busyFloor)
        busyFloor = nil
        knownBusy = busy
        knownChanges = changes
        return busy
    }

    /// Drops the sent slots before `head` of one of the link's queues (`central`, `peripheral`,
    /// `toCentral`) once there are more than 256 and they are most of it: the array neither grows
    /// without end nor shifts on every PDU sent.
    // The check inlined into the three queues' senders (a call of its own per PDU sent); the
    // rare compaction is not.
    @inline(__always)
    private static func compact<PDU>(_ queue: inout [PDU], head: inout Int) {
        if head > 256, head * 2 > queue.count { removeSent(&queue, head: &head) }
    }

    @inline(never)
    private static func removeSent<PDU>(_ queue: inout [PDU], head: inout Int) {
        queue.removeFirst(head)
        head = 0
    }

    // Inlined into the event loop: nearly always nobody waits, and the check is all it does.
    @inline(__always)
    private func wakeBlockedWriters() {
        while commandsQueued < profile.writeQueueDepth, !blockedWriters.isEmpty {
            let writer = blockedWriters.removeFirst()
            enqueueCommand(writer.value, to: writer.characteristic)
            finish(writer, .value(Data()))
        }
    }

    /// Ends a blocked writer's wait: resumes its task once the lock is released, or leaves the
    /// outcome for it if it runs the link ahead. Under the lock.
    private func finish(_ writer: BlockedWriter, _ outcome: Answer) {
        if let continuation = writer.continuation {
            resumeAfterUnlock(continuation, with: outcome)
        } else {
            wokenAhead.append((writer.id, outcome))
            answersAhead.store(true, ordering: .releasing)
        }
    }

    private func deliverToDevice(_ pdu: CentralPDU, at time: Int128) {
        deliveryTime = time
        // The model (and the persistence's callback) may use the flash: its change count then
        // moves, and the next check settles through it (`isDeviceBackedUp`).
        switch pdu.kind {
        case .command:
            commandsQueued -= 1
            let count = pdu.value.count
            if let arrival = device.arrivedUnfaulted(bytes: count) {
                statistics.dataBytesDelivered += count
                arrival.received?(arrival.total)
                _ = model.write(pdu.value, to: pdu.characteristic, kind: .withoutResponse, peripheral: self)
                _ = settledBusy(at: time)
                return
            }
            let outcome = device.applyFaults(to: pdu.value)
            for value in outcome.deliveries {
                statistics.dataBytesDelivered += value.count
                device.consumeEnergy(receiving: value.count)
                device.receivedData(value.count)
                _ = model.write(value, to: pdu.characteristic, kind: .withoutResponse, peripheral: self)
            }
            _ = settledBusy(at: time)
            let at = Duration(attoseconds: time)
            if outcome.reboot {
                let device = self.device
                simulation.schedule(at: at) { device.reboot() }
            } else if outcome.disconnect {
                simulation.schedule(at: at) { self.drop(DisconnectReason("injected fault")) }
            }
            if let delay = outcome.dropAfter {
                simulation.schedule(at: at + delay) {
                    self.drop(DisconnectReason("link lost (injected fault: the data path died \(delay.humanReadable) earlier)"))
                }
            }
        case .request(let id):
            device.consumeEnergy(receiving: pdu.value.count)
            guard model.acknowledgesWritesOnArrival else {
                let status = model.write(pdu.value, to: pdu.characteristic, kind: .withResponse, peripheral: self)
                enqueuePeripheral(.writeResponse(id, status), after: time)
                return
            }
            // The stack answers at once; what the write makes the device do comes after. The
            // response goes ahead of the notifications the write queues (and of any still
            // waiting for earlier work), not behind the device's flash backlog.
            let queued = peripheral.count - peripheralHead
            let status = model.write(pdu.value, to: pdu.characteristic, kind: .withResponse, peripheral: self)
            let ready = time + clock.processingLatency
            device.willReply()
            // Among the PDUs queued before the write (all of them gone if it dropped the link).
            let end = peripheralHead + min(queued, peripheral.count - peripheralHead)
            let position = peripheral[peripheralHead..<end].firstIndex { $0.readyAt > ready } ?? end
            var response = PeripheralPDU.writeResponse(id, status)
            response.readyAt = ready
            peripheral.insert(response, at: position)
            scheduleEvent()
        case .read(let id):
            let result = device.readStandard(pdu.characteristic) ?? model.read(pdu.characteristic, peripheral: self)
            enqueuePeripheral(.readResponse(id, result), after: time)
        }
    }

    private func enqueuePeripheral(_ pdu: consuming PeripheralPDU, after time: Int128) {
        pdu.readyAt = settledBusy(at: time) + clock.processingLatency
        device.willReply()
        peripheral.append(pdu)
        scheduleEvent()
    }

    /// Puts a PDU the event sent on its way to the central: its timer, in the place taken now,
    /// is set when the event ends (`setTimers`).
    private func deliverToCentral(_ pdu: consuming PeripheralPDU, at time: Int128) {
        guard deliveryCall != nil else { return }
        pdu.readyAt = time
        pdu.deliveryTimer = executor.reserveTimerID()
        toCentral.append(pdu)
        deliveriesToSet += 1
    }

    /// A delivery timer fired: the PDU at the head of `toCentral` reaches the central.
    private func deliverNextToCentral() {
        lock.lock()
        guard toCentral[toCentralHead].kind != .notification else {
            let pdu = takeNextDelivery()
            if disconnectReason == nil, let characteristic = pdu.characteristic, deliverNotification(pdu.value, on: characteristic) {
                statistics.notificationsDelivered += 1
            }
            unlock()
            return
        }
        var continuation: UnsafeContinuation<Answer, Never>?
        var reply: Answer?
        deliverHeadResponse(resuming: &continuation, with: &reply)
        unlock()
        if let continuation, let reply { continuation.resume(returning: reply) }
    }

    /// The PDU at the head of `toCentral`, taken out; under the lock.
    @inline(__always)
    private func takeNextDelivery() -> PeripheralPDU {
        let pdu = toCentral.take(toCentralHead, leaving: .vacant)
        toCentralHead += 1
        Self.compact(&toCentral, head: &toCentralHead)
        return pdu
    }

    /// Hands the response at the head of `toCentral` to the task that asked
    /// (``answer(_:with:resuming:with:)``): the value, or the device's ATT error. Sets `resume`
    /// and `answer` if the task waits suspended, for the caller to resume outside the lock; under
    /// the lock. The response is read in place and its value taken out, so its slot keeps nothing
    /// to release, as a sent one must: moving the whole PDU out and a vacant one in copied about
    /// 50 instructions' worth per response. (Not an optional pair returned: that was checked and
    /// destroyed through value witnesses; and the answer is moved, not copied.)
    @inline(__always)
    private func deliverHeadResponse(resuming resume: inout UnsafeContinuation<Answer, Never>?, with answer: inout Answer?) {
        let head = toCentralHead
        let request = toCentral[head].request
        let status = toCentral[head].status
        let value = toCentral[head].takeValue()
        let reply: Answer
        if status.rawValue == Self.success {
            reply = .value(value)
        } else {
            let operation = toCentral[head].kind == .writeResponse ? "write" : "read"
            reply = .failure(TransportError(.attError(status.rawValue), "device answered the \(operation) with \(status)"))
        }
        toCentralHead += 1
        Self.compact(&toCentral, head: &toCentralHead)
        self.answer(request, with: reply, resuming: &resume, with: &answer)
    }

    /// `ATTStatus.success`, as a literal: the static property of another module's type is reached
    /// through a call to its accessor (one per response, and one per PDU made with the default).
    private static let success: UInt8 = 0x00

    // MARK: - PeripheralContext

    // The flash the link holds: through `device`, the device was retained and released too.
    public var flash: any FlashStorage { deviceFlash }

    public func isSubscribed(to characteristic: CharacteristicID) -> Bool {
        withLock { hasSubscription(to: characteristic) }
    }

    public func notify(_ value: Data, on characteristic: CharacteristicID) {
        withLock {
            guard disconnectReason == nil, hasSubscription(to: characteristic) else { return }
            let now = eventNow ?? executor.now.attoseconds
            enqueuePeripheral(.notification(characteristic, value), after: deliveryTime > now ? deliveryTime : now)
        }
    }

    /// The subscriber to `characteristic`, if it has one: the last one found, or looked up and
    /// kept as the last; under the lock.
    private func subscriber(of characteristic: CharacteristicID) -> NotificationSubscriber? {
        if lastSubscribed == characteristic, let lastSubscriber { return lastSubscriber }
        guard let found = subscriptions[characteristic]?.subscriber else { return nil }
        lastSubscribed = characteristic
        lastSubscriber = found
        if case .push(let receiver) = found { lastReceive = receiver.receive } else { lastReceive = nil }
        return found
    }

    /// Hands `value` to `characteristic`'s subscriber, if it has one (`false` if not): to the
    /// last receiver found (``lastReceive``) without copying its subscriber out, otherwise through
    /// ``subscriber(of:)``; under the lock.
    @inline(__always)
    private func deliverNotification(_ value: Data, on characteristic: CharacteristicID) -> Bool {
        if lastSubscribed == characteristic, let lastReceive {
            lastReceive(value)
            return true
        }
        guard let subscriber = subscriber(of: characteristic) else { return false }
        subscriber.deliver(value)
        return true
    }

    /// Whether `characteristic` has a subscriber (``subscriber(of:)``, without copying it when
    /// it is the last one found); under the lock.
    private func hasSubscription(to characteristic: CharacteristicID) -> Bool {
        lastSubscribed == characteristic || subscriber(of: characteristic) != nil
    }

    /// Clears the subscription kept as the last found; under the lock, whenever `subscriptions`
    /// changes.
    private func forgetLastSubscription() {
        lastSubscribed = nil
        lastSubscriber = nil
        lastReceive = nil
    }

    public func reboot(after delay: Duration) {
        device.scheduleReboot(after: delay)
    }

    // MARK: - Disconnect

    /// Takes the link down: waiting writers and requests fail, notification streams finish,
    /// the device is told. Does nothing if the link is already down.
    public func drop(_ reason: DisconnectReason) {
        let wasUp: Bool = withLock {
            guard let notice = disconnectWatchers.markDown(reason) else { return false }
            let error = TransportError.disconnected(reason)
            for writer in blockedWriters { finish(writer, .failure(error)) }
            blockedWriters.removeAll()
            // A suspended request is resumed; one running ahead finds the failure as its answer.
            for request in pendingReplies {
                if let continuation = request.continuation {
                    resumeAfterUnlock(continuation, with: .failure(error))
                } else {
                    keepAhead(answer: .failure(error), for: request.id)
                }
            }
            pendingReplies.removeAll()
            if let floor = busyFloor {
                // A settling done without the flash's lock: the flash keeps it, as it would have.
                device.flash.raiseBusy(to: floor)
                busyFloor = nil
            }
            for (_, subscription) in subscriptions { subscription.subscriber.finish() }
            subscriptions.removeAll()
            forgetLastSubscription()
            notice.deliver()
            central.removeAll()
            centralHead = 0
            commandsQueued = 0
            peripheral.removeAll()
            peripheralHead = 0
            // The timers' calls hold the link: without them it goes once nothing else holds it.
            eventCall = nil
            deliveryCall = nil
            return true
        }
        guard wasUp else { return }
        if let adapter { adapter.adapter.release(adapter.slot) }
        device.detach(self)
        device.model.disconnected()
    }
}

/// The link's times, precomputed in attoseconds (`Duration.attoseconds`): a connection event
/// adds and compares them inline, the same exact values `Duration`'s operators (calls into
/// the standard library, a few per packet) gave.
struct LinkClock {
    var anchor: Int128
    var interval: Int128
    /// ``PHY/airTime(payload:)`` = `airFixed + airPerByte × payload`.
    var airFixed: Int128
    var airPerByte: Int128
    /// ``LinkProfile/pairTime(central:peripheral:)`` = `pairFixed + airPerByte × (both payloads)`.
    var pairFixed: Int128
    var backlogLimit: Int128
    var processingLatency: Int128
    /// Whether `interval` is exact as a `Double` (a condition of `events(until:interval:intervalIsExact:near:)`).
    var intervalIsExact = false
    /// The event count (from the anchor) of the last event scheduled: the next is near it.
    var lastEvents: Int64 = 0
    /// That event's time, `anchor + interval × lastEvents`.
    var lastTime: Int128
    static let nanosecond: Int128 = 1_000_000_000

    init(anchor: Duration, link: LinkProfile, device: DeviceProfile) {
        let microsecond: Int128 = 1_000_000_000_000
        let air = link.phy.airTimeMicroseconds
        self.anchor = anchor.attoseconds
        lastTime = self.anchor
        interval = link.connectionInterval.attoseconds
        airFixed = Int128(air.fixed) * microsecond
        airPerByte = Int128(air.perByte) * microsecond
        pairFixed = 2 * airFixed + 2 * LinkProfile.interFrameSpace.attoseconds
        backlogLimit = device.backlogLimit.attoseconds
        processingLatency = device.processingLatency.attoseconds
        intervalIsExact = Self.isExactDouble(interval)
    }

    /// The first connection event at or after `earliest`, remembered as the start of the next
    /// search.
    ///
    /// Nearly always that is the last event found or the one after it: then neither the search
    /// nor its rounding checks run in full. The count is `events(until:interval:intervalIsExact:near:)`'s
    /// whenever the time found is at least two units in the last place of its own distance from
    /// the anchor after `earliest` (or `earliest`'s distance is exact as a `Double`): the unit
    /// only grows with the distance, so `earliest`'s is no larger, and its check passes too.
    mutating func nextEvent(atOrAfter earliest: Int128) -> Int128 {
        if intervalIsExact, earliest >= anchor, earliest > lastTime &- interval {
            var time = lastTime
            var count = lastEvents
            if earliest > time {
                time &+= interval
                count &+= 1
            }
            let distance = time &- anchor
            if earliest <= time, count < 1 << 52, distance < 1 << 120,
                time &- earliest >= 2 &* Self.unitInLastPlace(distance) || Self.isExactDouble(earliest &- anchor)
            {
                lastEvents = count
                lastTime = time
                return time
            }
        }
        lastEvents = Self.events(until: earliest - anchor, interval: interval, intervalIsExact: intervalIsExact, near: lastEvents)
        lastTime = anchor + interval &* Int128(lastEvents)
        return lastTime
    }

    /// How many intervals from the anchor to the first event at or after `sinceAnchor`
    /// (attoseconds): what the link always computed, the `Double` quotient
    /// `sinceAnchor / interval` rounded up, then corrected upwards once.
    ///
    /// That is the integer ceiling `k` whenever the `Double`s cannot round across `k`: `k` below
    /// 2^52, the interval exact as a `Double`, and `sinceAnchor` either exact too (an exact quotient
    /// rounds monotonically, never past the integer above it) or at least two units in its last
    /// place below `k × interval` (so that converting it cannot reach that multiple; the
    /// correction covers a quotient rounded down to `k - 1`). Then `k` is found with integers,
    /// stepping from `guess` (the last event's count: the next is a step or a few away), without
    /// a 128-bit division or a `Double`. Otherwise, or far from `guess`, the old computation runs
    /// as it was, so no event can move.
    static func events(until sinceAnchor: Int128, interval: Int128, intervalIsExact: Bool, near guess: Int64) -> Int64 {
        guard intervalIsExact, interval > 0, sinceAnchor >= 0, sinceAnchor < (1 << 120) else {
            return doubleEvents(until: sinceAnchor, interval: interval)
        }
        var count = max(0, guess)
        var time = interval &* Int128(count)
        var steps = 0
        while time < sinceAnchor {
            time &+= interval
            count += 1
            steps += 1
            if steps > 64 { return doubleEvents(until: sinceAnchor, interval: interval) }
        }
        while count > 0, time &- interval >= sinceAnchor {
            time &-= interval
            count -= 1
            steps += 1
            if steps > 64 { return doubleEvents(until: sinceAnchor, interval: interval) }
        }
        // `count` is the ceiling; the Double path gives it unless its rounding could cross (or
        // the count itself is past what a `Double` holds exactly).
        if count >= 1 << 52 { return doubleEvents(until: sinceAnchor, interval: interval) }
        if !isExactDouble(sinceAnchor), time &- sinceAnchor < 2 &* unitInLastPlace(sinceAnchor) {
            return doubleEvents(until: sinceAnchor, interval: interval)
        }
        return count
    }

    /// Significant bits of a non-negative `value`.
    private static func bitLength(_ value: Int128) -> Int {
        let high = UInt64(truncatingIfNeeded: value >> 64)
        let low = UInt64(truncatingIfNeeded: value)
        return high != 0 ? 128 - high.leadingZeroBitCount : 64 - low.leadingZeroBitCount
    }

    /// Whether a non-negative `value` converts to a `Double` exactly (53 significant bits).
    static func isExactDouble(_ value: Int128) -> Bool {
        guard value != 0 else { return true }
        let low = UInt64(truncatingIfNeeded: value)
        let trailing = low != 0 ? low.trailingZeroBitCount : 64 + UInt64(truncatingIfNeeded: value >> 64).trailingZeroBitCount
        return bitLength(value) - trailing <= 53
    }

    /// The spacing of `Double`s around a non-negative `value` (1 below 2^53).
    private static func unitInLastPlace(_ value: Int128) -> Int128 {
        let length = bitLength(value)
        return length <= 53 ? 1 : 1 << (length - 53)
    }

    /// The computation `events(until:interval:intervalIsExact:near:)` replaces where it can, kept
    /// as it was.
    static func doubleEvents(until sinceAnchor: Int128, interval: Int128) -> Int64 {
        let since = Duration(attoseconds: sinceAnchor)
        let step = Duration(attoseconds: interval)
        var events = Int64((since / step).rounded(.up))
        if step.exactlyTimes(events) < since { events += 1 }
        return events
    }
}

extension Array {
    /// Moves element `index` out, leaving `vacant` in its place: nothing copied or released
    /// (the link's queues, which keep their sent slots until they compact).
    fileprivate mutating func take(_ index: Int, leaving vacant: consuming Element) -> Element {
        var taken = vacant
        swap(&taken, &self[index])
        return taken
    }
}
