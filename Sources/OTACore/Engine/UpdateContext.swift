import Foundation
import Synchronization

/// What the engine gives a protocol while it runs: the link wrapped with timeouts, the chunk plan
/// from the negotiated MTU, back-pressure, stall detection, device progress, sleeping on the
/// engine's clock, and state reporting.
///
/// Protocols reach the link only through these services, so that every protocol gets the same
/// behaviour at the edges: the same timeouts, the same error messages, the same events.
public final class UpdateContext: Sendable {
    /// The connected link. Internal: protocols go through the context's services.
    let transport: any Transport
    /// `transport`, when it can take a write without response on the spot (cast once here, not
    /// per write).
    private let immediateWriter: (any ImmediateWriting)?
    /// `transport`, when it can often answer a write with response within the call that sends it
    /// (cast once here, not per write).
    private let immediateRequester: (any ImmediateRequesting)?
    /// `transport`, when a wait for its notifications can run its link ahead (cast once here, not
    /// per inbox).
    private let runner: (any RunningAhead)?
    /// The engine's configuration.
    public let configuration: UpdateConfiguration
    /// The engine's clock; protocols sleep on it (``sleep(for:purpose:)``), never on a clock of
    /// their own.
    public let clock: any Clock<Duration>
    /// How image data is cut into writes on this connection, built once by the engine from the
    /// protocol's ``UpdateProtocol/dataWrites``, the negotiated link and
    /// ``UpdateConfiguration/maximumChunkSize``. ``writeData(_:to:covering:)`` and
    /// ``stream(_:range:to:frame:)`` use it; the report gives its payload size.
    public let chunkPlan: ChunkPlan
    let recorder: EventRecorder
    let device: DeviceProgress
    /// The device's address as the transport sees it (``Connector/airAddress``), for a protocol
    /// that must find the device again under an address derived from it; `nil` when the
    /// transport does not see addresses.
    public let deviceAddress: String?
    private let randomness: UpdateRandomness
    /// Whether a data write was made on this connection: the device's first data offset is
    /// recorded once, not under its lock at every chunk.
    private let dataStarted = Atomic<Bool>(false)
    /// Data writes completed on this connection: what the stall watchdog watches (engine state,
    /// not the recorder's). An atomic: one relaxed add per chunk, one load per watchdog period.
    private let dataWritesCompleted = Atomic<Int>(0)

    /// The context of `updateProtocol` on `transport`: checks that the device exposes what the
    /// protocol requires, then plans the chunks once for this connection.
    init(
        for updateProtocol: any UpdateProtocol,
        over transport: any Transport,
        configuration: UpdateConfiguration,
        clock: any Clock<Duration>,
        recorder: EventRecorder,
        deviceAddress: String? = nil,
        randomness: UpdateRandomness = UpdateRandomness(seed: nil)
    ) throws(OTAError) {
        try Self.require(
            updateProtocol.requirements, on: transport, hint: "is the device running firmware with this update service?"
        )
        chunkPlan = try ChunkPlan(link: transport.link, shape: updateProtocol.dataWrites, cap: configuration.maximumChunkSize)
        self.transport = transport
        immediateWriter = transport as? any ImmediateWriting
        immediateRequester = transport as? any ImmediateRequesting
        runner = transport as? any RunningAhead
        self.configuration = configuration
        self.clock = clock
        self.recorder = recorder
        device = recorder.device
        self.deviceAddress = deviceAddress
        self.randomness = randomness
    }

    /// A random number for a choice the protocol makes (the name a bootloader is told to
    /// advertise): the system's, or from ``UpdateConfiguration/randomSeed``'s sequence, so that
    /// a seeded run repeats exactly.
    public func randomNumber() -> UInt64 {
        randomness.next()
    }

    // MARK: - The link

    /// What the link negotiated.
    public var link: LinkParameters { transport.link }

    /// The characteristics the device exposes, with their properties, as discovered on connect.
    public var characteristics: [CharacteristicID: CharacteristicProperties] { transport.characteristics }

    /// Checks that the device exposes every characteristic of `requirements` with the property
    /// named there.
    ///
    /// - Parameter hint: what the user should check when one is missing ("is the device in its
    ///   bootloader?").
    /// - Throws: ``OTAError/Code/missingCharacteristic``: "<role>: <why>; <hint>".
    public func require(_ requirements: [CharacteristicRequirement], hint: String) throws(OTAError) {
        try Self.require(requirements, on: transport, hint: hint)
    }

    static func require(_ requirements: [CharacteristicRequirement], on transport: any Transport, hint: String) throws(OTAError) {
        for requirement in requirements {
            do {
                try transport.requireCharacteristic(requirement.id, allowing: requirement.properties)
            } catch {
                throw OTAError(.missingCharacteristic, "\(requirement.role): \(error.message); \(hint)", underlying: error)
            }
        }
    }

    // MARK: - Reporting

    /// Reports a phase change (transferring, verifying, committing).
    public func enter(_ state: UpdateState, detail: String? = nil) {
        recorder.enter(state, detail: detail)
    }

    /// Records that the device holds the first `total` bytes of the image (not an increment; it
    /// can go down when the device starts a session over).
    ///
    /// This is engine state: it decides whether a reconnection made progress (and so resets the
    /// reconnect backoff), and it is reported as ``UpdateProgress/bytesAcknowledged``.
    public func acknowledged(total: Int) {
        device.acknowledge(total: total)
        recorder.flushProgress()
    }

    /// Adds a line to the verbose log.
    public func note(_ text: String) {
        recorder.note(text)
    }

    // MARK: - Waiting

    /// Waits `duration` on the engine's clock.
    ///
    /// - Parameter purpose: what the wait is for ("waiting for the bootloader to prepare the first
    ///   object"), for the error message.
    /// - Throws: ``OTAError/Code/cancelled`` "cancelled while <purpose>" when the task is cancelled.
    public func sleep(for duration: Duration, purpose: String) async throws(OTAError) {
        do {
            try await clock.sleep(for: duration)
        } catch {
            throw OTAError(.cancelled, "cancelled while \(purpose)")
        }
    }

    // MARK: - Commands

    /// Writes a command, or a value that is not image data (an init packet): no progress is
    /// counted. A write with response waits at most the response timeout for the device's ATT
    /// response. Inside the protocol's run the run's one response timer keeps that limit
    /// (decision 0063): a write that waits too long ends the run with its timeout error, so a
    /// `catch` around the call sees the cancellation, not the timeout.
    ///
    /// - Parameter purpose: what the write is ("START"), for error messages: made only if the
    ///   write fails, so a description built per request (`request.description`) costs nothing
    ///   while the device answers.
    public func write(
        _ value: Data, to characteristic: CharacteristicID, kind: WriteKind, purpose: @autoclosure @escaping @Sendable () -> String
    ) async throws(OTAError) {
        let transport = self.transport
        do {
            switch kind {
            case .withoutResponse:
                try await transport.write(value, to: characteristic, kind: kind)
            case .withResponse:
                let limit = configuration.responseTimeout
                if let timer = runTimer {
                    // The run's timer bounds the wait, failing the run as the limit below would.
                    let timedOut = RunTimer.Failure.other({
                        Self.describe(Self.acknowledgementTimedOut(after: limit, for: purpose()), doing: "writing \(purpose())")
                    })
                    if let requester = immediateRequester {
                        // As `writeData`'s data: a command per object or batch no longer pays
                        // the two hops back after the closure and the existential call.
                        try await request(value, to: characteristic, through: requester, timer: timer, failing: timedOut) {
                            "writing \(purpose())"
                        }
                        return
                    }
                    try await timer.bound(failing: timedOut) { () throws(OTAError) in
                        do {
                            try await transport.write(value, to: characteristic, kind: kind)
                        } catch {
                            throw Self.describe(error, doing: "writing \(purpose())")
                        }
                    }
                    return
                }
                try await withTimeout(limit, clock: clock, timeoutError: Self.acknowledgementTimedOut(after: limit, for: purpose())) {
                    try await transport.write(value, to: characteristic, kind: kind)
                }
            }
        } catch {
            throw Self.describe(error, doing: "writing \(purpose())")
        }
    }

    /// A write with response inside the protocol's run, through the transport's
    /// ``ImmediateRequesting``: sent, and nearly always answered, within one call, awaited only
    /// when the answer is still to come (decision 0076); the run's timer bounds it, failing with
    /// `failure`, as ``RunTimer/bound(failing:_:)`` would. A transport error is described as
    /// `activity` (made only then). Inlined into its callers: a call of its own is an async call,
    /// and the closure it takes would be one more.
    @inline(__always)
    private func request(
        _ value: Data, to characteristic: CharacteristicID, through requester: any ImmediateRequesting, timer: RunTimer,
        failing failure: RunTimer.Failure, doing activity: () -> String
    ) async throws(OTAError) {
        let token = timer.starts(failing: failure)
        defer { timer.ended(token) }
        do throws(TransportError) {
            switch requester.startWriteWithResponse(value, to: characteristic) {
            case .answered: break
            case .failed(let error): throw error
            case .pending(let write): try await requester.awaitAnswer(to: write)
            }
        } catch {
            throw Self.describe(error, doing: activity())
        }
    }

    /// The timer of the run this task belongs to, when it bounds this context's operations
    /// (``withRunTimer(_:)``).
    private var runTimer: RunTimer? {
        guard let timer = RunTimer.current, timer.context == ObjectIdentifier(self) else { return nil }
        return timer
    }

    /// Runs `body` (one run of the protocol) with one timer that bounds every write with response
    /// and every read made through this context in it by the response timeout, and keeps the
    /// stall checks of every ``withStallWatchdog(_:)`` in it, as each would with a timer of its
    /// own (decision 0063). A limit that runs out cancels `body`, and the call fails with that
    /// limit's error.
    func withRunTimer<R: Sendable>(_ body: @escaping @Sendable () async throws(OTAError) -> R) async throws(OTAError) -> R {
        let timer = RunTimer(
            context: ObjectIdentifier(self), limit: configuration.responseTimeout, stallTimeout: configuration.stallTimeout, clock: clock,
            writesCompleted: { [self] in dataWritesCompleted.load(ordering: .relaxed) }
        )
        do {
            return try await withThrowingTaskGroup(of: R?.self) { group in
                group.addTask { try await RunTimer.$current.withValue(timer) { () async throws -> R in try await body() } }
                group.addTask {
                    try await timer.run()
                    return nil
                }
                defer { group.cancelAll() }
                // The body finishing first ends the timer; the timer throwing ends the body.
                guard let first = try await group.next(), let result = first else {
                    throw OTAError(.internal, "run timer ended without a result")
                }
                return result
            }
        } catch let error as OTAError {
            throw error
        } catch {
            throw Self.describe(error, doing: "updating")
        }
    }

    /// The error of a write with response that the device did not acknowledge in time.
    static func acknowledgementTimedOut(after limit: Duration, for purpose: String) -> OTAError {
        OTAError(.timeout, "timed out after \(limit.humanReadable) waiting for the device to acknowledge \(purpose); is it still powered and in range?")
    }

    /// The error of a with-response data write of the bytes at `offset` that waited longer than
    /// `limit` for its acknowledgement, as ``writeData(_:to:covering:)`` reports it.
    static func dataAcknowledgementTimedOut(after limit: Duration, at offset: Int) -> OTAError {
        describe(
            describe(acknowledgementTimedOut(after: limit, for: "data at byte \(offset)"), doing: "writing data at byte \(offset)"),
            doing: "sending data")
    }

    /// Reads a characteristic, waiting at most the response timeout (inside the protocol's run,
    /// on the run's response timer, as ``write(_:to:kind:purpose:)``).
    public func read(_ characteristic: CharacteristicID, purpose: String) async throws(OTAError) -> Data {
        let transport = self.transport
        let limit = configuration.responseTimeout
        if let timer = runTimer {
            return try await timer.bound(
                failing: .other({ Self.describe(OTAError(.timeout, "timed out after \(limit.humanReadable) reading \(purpose)"), doing: "reading \(purpose)") })
            ) { () throws(OTAError) in
                do {
                    return try await transport.read(characteristic)
                } catch {
                    throw Self.describe(error, doing: "reading \(purpose)")
                }
            }
        }
        do {
            return try await withTimeout(
                limit,
                clock: clock,
                timeoutError: OTAError(.timeout, "timed out after \(limit.humanReadable) reading \(purpose)")
            ) {
                try await transport.read(characteristic)
            }
        } catch {
            throw Self.describe(error, doing: "reading \(purpose)")
        }
    }

    /// Enables notifications on `characteristic` for the duration of `body`.
    public func withNotifications<R>(
        from characteristic: CharacteristicID,
        _ body: (NotificationInbox) async throws(OTAError) -> R
    ) async throws(OTAError) -> R {
        let inbox = NotificationInbox(
            characteristic: characteristic, clock: clock, defaultTimeout: configuration.responseTimeout, runner: runner
        )
        // A transport that pushes notifications hands them to the inbox itself; otherwise a
        // child task reads its stream into the inbox (decision 0066).
        let source: (stream: AsyncStream<Data>?, subscription: NotificationSubscription?)
        do {
            if let pushing = transport as? any NotificationPushing {
                let receiver = NotificationReceiver(receive: { inbox.deliver($0) }, finished: { inbox.close() })
                source = (nil, try await pushing.pushNotifications(from: characteristic, to: receiver))
            } else {
                source = (try await transport.notifications(from: characteristic), nil)
            }
        } catch {
            throw Self.describe(error, doing: "enabling notifications on \(characteristic.characteristic)")
        }
        defer { source.subscription?.cancel() }
        do {
            return try await withThrowingTaskGroup(of: Void.self, returning: R.self) { group in
                if let stream = source.stream {
                    group.addTask {
                        for await value in stream { inbox.deliver(value) }
                        inbox.close()
                    }
                }
                group.addTask { await inbox.runTimer() }
                defer { group.cancelAll() }
                return try await body(inbox)
            }
        } catch {
            throw Self.describe(error, doing: "updating")
        }
    }

    // MARK: - Streaming

    /// Writes one chunk of image data (framed as the protocol needs) and records that `range` of
    /// the image was sent. For protocols that run their own transfer loop inside
    /// ``withStallWatchdog(_:)``.
    ///
    /// The write goes as ``chunkPlan`` says: without response through the transport's
    /// back-pressure, or with response waiting for the device's acknowledgement, at most the
    /// response timeout.
    public func writeData(_ value: Data, to characteristic: CharacteristicID, covering range: Range<Int>) async throws(OTAError) {
        if !dataStarted.load(ordering: .relaxed) {
            device.dataStarts(at: range.lowerBound, time: recorder.elapsed)
            dataStarted.store(true, ordering: .relaxed)
        }
        switch chunkPlan.writeKind {
        case .withoutResponse:
            do {
                if try immediateWriter?.writeWithoutResponseIfReady(value, to: characteristic) != true {
                    try await transport.write(value, to: characteristic, kind: .withoutResponse)
                }
            } catch {
                throw Self.describe(error, doing: "sending data at byte \(range.lowerBound)")
            }
        case .withResponse:
            let offset = range.lowerBound
            if let timer = runTimer, let requester = immediateRequester {
                try await request(value, to: characteristic, through: requester, timer: timer, failing: .dataWrite(offset: offset)) {
                    "writing data at byte \(offset)"
                }
            } else if let timer = runTimer {
                // The run's timer bounds the wait for the acknowledgement.
                try await timer.bound(failing: .dataWrite(offset: offset)) { () throws(OTAError) in
                    do {
                        try await transport.write(value, to: characteristic, kind: .withResponse)
                    } catch {
                        throw Self.describe(error, doing: "writing data at byte \(offset)")
                    }
                }
            } else {
                try await write(value, to: characteristic, kind: .withResponse, purpose: "data at byte \(offset)")
            }
        }
        dataWritesCompleted.add(1, ordering: .relaxed)
        recorder.sent(range)
    }

    /// Records that the transfer moved back to `offset` (after a NAK, a timeout or a resume).
    public func rewound(to offset: Int) {
        recorder.rewound(to: offset)
    }

    /// Runs `body` while a watchdog checks that data keeps flowing: if no data write completes
    /// during a whole ``UpdateConfiguration/stallTimeout``, `body` is cancelled and the call fails
    /// with ``OTAError/Code/stalled``. A with-response ``writeData(_:to:covering:)`` in `body`
    /// that waits longer than the response timeout for its acknowledgement fails the call with
    /// ``OTAError/Code/timeout``, as outside a watchdog.
    public func withStallWatchdog<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) async throws(OTAError) -> R {
        let recorder = self.recorder
        let stallTimeout = configuration.stallTimeout
        let stalled: @Sendable () -> OTAError = {
            let progress = recorder.progress
            return OTAError(
                .stalled,
                "no data accepted by the link for \(stallTimeout.humanReadable) at byte \(progress.position) of \(progress.totalBytes); the device stopped taking data"
            )
        }
        guard let timer = runTimer else {
            // Outside the run's task (a task of its own): a run timer for this body alone.
            return try await withRunTimer { () throws(OTAError) in try await self.withStallWatchdog(body) }
        }
        // The run's timer keeps the checks; a watchdog inside a watchdog runs under the outer
        // one's checks, which fail with the same error.
        let armed = timer.armStallChecks(stalled: { Self.describe(stalled(), doing: "sending data") })
        defer { if armed { timer.disarmStallChecks() } }
        do {
            return try await body()
        } catch {
            throw Self.describe(error, doing: "sending data")
        }
    }

    /// Streams `range` of `image` to `characteristic`, one chunk per write as ``chunkPlan`` says
    /// (its payload size and write kind), honouring the transport's back-pressure, under the stall
    /// watchdog.
    ///
    /// `frame` turns each chunk into the bytes written (for protocols with a per-chunk header);
    /// by default the chunk is written as is, without copying.
    ///
    /// - Throws: ``OTAError/Code/stalled`` when the link takes no write for the stall timeout;
    ///   ``OTAError/Code/disconnected`` when the link drops.
    public func stream(
        _ image: FirmwareImage,
        range: Range<Int>,
        to characteristic: CharacteristicID,
        frame: (@Sendable (_ offset: Int, _ chunk: Data) -> Data)? = nil
    ) async throws(OTAError) {
        let plan = chunkPlan
        try await withStallWatchdog { [self] in
            var offset = range.lowerBound
            while offset < range.upperBound {
                let chunk = plan.chunk(at: offset, in: range.upperBound)
                let payload = try image[chunk]
                try await writeData(frame?(offset, payload) ?? payload, to: characteristic, covering: chunk)
                offset = chunk.upperBound
            }
        }
        recorder.flushProgress()
    }

    static func describe(_ error: any Error, doing activity: String) -> OTAError {
        if Task.isCancelled, !(error is OTAError) {
            return OTAError(.cancelled, "cancelled while \(activity)")
        }
        return OTAError.wrapping(error, context: activity)
    }
}
