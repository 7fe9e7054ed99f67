import Synchronization

/// The one timer of a protocol run (decision 0063). It keeps two kinds of limits that would
/// otherwise each race a timer of their own (``withTimeout(_:clock:timeoutError:operation:)``:
/// a task group, two child tasks and a sleep per call, or a task group per watched stream):
///
/// - *Response limits.* A write with response or a read through the run's context stores its
///   deadline (now + ``limit``) here and clears it when it returns. When a deadline passes with
///   its operation still pending, the timer throws that operation's timeout error.
/// - *Stall checks.* ``UpdateContext/withStallWatchdog(_:)`` arms them for its body: every stall
///   period from the arming, the count of completed data writes must have moved since the check
///   before, or the timer throws the stall error.
///
/// Whatever the timer throws ends the run (the group's other child is cancelled), with the error
/// the limit or watchdog of its own would have thrown, at the same time.
///
/// Every operation waits the same limit, so deadlines are stored in the order they fall and a new
/// one is never earlier than a wake the timer already planned for an older one. Stall checks fall
/// one period after their arming, and the timer never sleeps longer than one period at a time
/// while it has anything to watch, so a check armed meanwhile is never earlier than its planned
/// wake either: the timer is never woken early. With nothing to watch it parks until something
/// starts.
final class RunTimer: Sendable {
    /// The timer of the run the current task belongs to.
    @TaskLocal static var current: RunTimer?

    /// What a pending operation fails with when its limit runs out.
    enum Failure: Sendable {
        /// A with-response data write of the bytes at `offset`: its error is made here, so a data
        /// write stores two words and allocates nothing (one per packet for Espressif).
        case dataWrite(offset: Int)
        /// Any other operation's own error.
        case other(@Sendable () -> OTAError)
    }

    private struct Pending {
        var id: UInt64
        var deadline: Duration
        var failure: Failure
    }

    private struct StallWatch {
        var check: Duration
        /// Data writes completed at the last check; -1 before the first.
        var seen: Int
        var stalled: @Sendable () -> OTAError
    }

    private struct State {
        var pending: [Pending] = []
        var nextID: UInt64 = 0
        var watch: StallWatch?
        /// The parked timer. Unchecked: a checked continuation's type is resilient, which made
        /// every access to this state (a lock per write with response) go through the type's
        /// metadata. Resumed once: whoever resumes it takes it out under the lock first.
        var parked: UnsafeContinuation<Void, Never>?
    }

    private enum Step {
        case fail(@Sendable () -> OTAError)
        case sleep(until: Duration)
        case park
    }

    private let state = Mutex(State())
    /// Whether the timer is parked: set, with `State.parked`, under the lock, so an operation or
    /// arming that follows the parking under the lock sees it after its own unlock, and one that
    /// precedes it is seen by the parking timer. The common path (the timer sleeping) so reads
    /// one atomic instead of moving a continuation through the lock.
    private let isParked = Atomic<Bool>(false)
    /// The context whose operations this timer bounds.
    let context: ObjectIdentifier
    /// How long each write with response or read may take: the response timeout.
    let limit: Duration
    /// The stall period.
    let stallTimeout: Duration
    private let writesCompleted: @Sendable () -> Int
    private let clock: any Clock<Duration>
    private let stopwatch: Stopwatch

    /// - Parameter writesCompleted: the count of data writes completed so far on the context.
    init(
        context: ObjectIdentifier, limit: Duration, stallTimeout: Duration, clock: any Clock<Duration>,
        writesCompleted: @escaping @Sendable () -> Int
    ) {
        self.context = context
        self.limit = limit
        self.stallTimeout = stallTimeout
        self.writesCompleted = writesCompleted
        self.clock = clock
        stopwatch = Stopwatch(clock: clock)
    }

    // MARK: - Response limits

    /// Records that an operation starts now; `failure` says what it fails with if it is still
    /// pending after ``limit``. Returns its token for ``ended(_:)``.
    func starts(failing failure: Failure) -> UInt64 {
        let token = state.withLock { state in
            state.nextID &+= 1
            // Read under the lock, so concurrent operations are stored in deadline order.
            state.pending.append(Pending(id: state.nextID, deadline: stopwatch.elapsed + limit, failure: failure))
            return state.nextID
        }
        wakeIfParked()
        return token
    }

    /// Records that the operation of `token` returned (answered or failed).
    func ended(_ token: UInt64) {
        state.withLock { state in
            // Nearly always the one operation pending, or the newest: removed without a shift.
            if state.pending.last?.id == token {
                state.pending.removeLast()
            } else if let index = state.pending.firstIndex(where: { $0.id == token }) {
                state.pending.remove(at: index)
            }
        }
    }

    /// Runs `operation` bounded by this timer: the timer throws the error of `failure` if it
    /// takes longer than ``limit``.
    func bound<T>(
        failing failure: Failure, _ operation: () async throws(OTAError) -> T
    ) async throws(OTAError) -> T {
        let token = starts(failing: failure)
        defer { ended(token) }
        return try await operation()
    }

    // MARK: - Stall checks

    /// Starts stall checks, the first one stall period from now; `stalled` is the error when the
    /// count of data writes did not move for a whole period. Returns false, arming nothing, while
    /// checks are already armed (a watchdog inside a watchdog runs under the outer one's checks).
    func armStallChecks(stalled: @escaping @Sendable () -> OTAError) -> Bool {
        let armed = state.withLock { state in
            guard state.watch == nil else { return false }
            state.watch = StallWatch(check: stopwatch.elapsed + stallTimeout, seen: -1, stalled: stalled)
            return true
        }
        if armed { wakeIfParked() }
        return armed
    }

    /// Ends the stall checks ``armStallChecks(stalled:)`` started.
    func disarmStallChecks() {
        state.withLock { $0.watch = nil }
    }

    // MARK: - The timer

    /// Watches until cancelled; throws the stall, or the timeout error of the first operation
    /// still pending at its deadline.
    func run() async throws {
        while true {
            let now = stopwatch.elapsed
            let step: Step = state.withLock { state in
                // A stall check comes first on a tie, as in the watchdog of its own.
                if var watch = state.watch, now >= watch.check {
                    let writes = writesCompleted()
                    if writes == watch.seen { return .fail(watch.stalled) }
                    watch.seen = writes
                    watch.check += stallTimeout
                    state.watch = watch
                }
                if let first = state.pending.first, now >= first.deadline {
                    switch first.failure {
                    case .dataWrite(let offset):
                        let limit = limit
                        return .fail({ UpdateContext.dataAcknowledgementTimedOut(after: limit, at: offset) })
                    case .other(let error):
                        return .fail(error)
                    }
                }
                let wakes = [state.pending.first?.deadline, state.watch?.check].compactMap { $0 }
                guard let wake = wakes.min() else { return .park }
                return .sleep(until: min(wake, now + stallTimeout))
            }
            switch step {
            case .fail(let error):
                throw error()
            case .sleep(let wake):
                try await clock.sleep(for: wake - now)
            case .park:
                await park()
                try Task.checkCancellation()
            }
        }
    }

    /// Resumes the parked timer, if it is parked.
    private func wakeIfParked() {
        guard isParked.load(ordering: .acquiring) else { return }
        let parked = state.withLock { state in
            defer {
                state.parked = nil
                isParked.store(false, ordering: .releasing)
            }
            return state.parked
        }
        parked?.resume()
    }

    /// Waits until there is something to watch or the task is cancelled.
    private func park() async {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if !state.pending.isEmpty || state.watch != nil || Task.isCancelled { return true }
                    state.parked = continuation
                    isParked.store(true, ordering: .releasing)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let parked = state.withLock { state in
                defer {
                    state.parked = nil
                    isParked.store(false, ordering: .releasing)
                }
                return state.parked
            }
            parked?.resume()
        }
    }
}
