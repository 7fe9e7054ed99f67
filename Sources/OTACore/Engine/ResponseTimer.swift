import Synchronization

/// The one timer of a protocol run that bounds its command writes with response and its reads
/// (decision 0063): each stores its deadline here and clears it when it returns, instead of
/// racing a timer of its own (``withTimeout(_:clock:timeoutError:operation:)``: a task group, two
/// child tasks and a sleep per call). When a deadline passes with its operation still pending,
/// the timer throws that operation's timeout error and the run (the group's other child) is
/// cancelled: the run fails with the error the operation's own limit threw, at the same time.
///
/// Every operation waits the same limit, so deadlines are stored in the order they fall: the
/// first pending one is the earliest, and a new one is never earlier than the timer's planned
/// wake. The timer therefore never needs waking early; with nothing pending it parks until the
/// next operation starts.
final class ResponseTimer: Sendable {
    /// The timer of the run the current task belongs to.
    @TaskLocal static var current: ResponseTimer?

    private struct Pending {
        var id: UInt64
        var deadline: Duration
        var error: @Sendable () -> OTAError
    }

    private struct State {
        var pending: [Pending] = []
        var nextID: UInt64 = 0
        var parked: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    /// The context whose operations this timer bounds.
    let context: ObjectIdentifier
    /// How long each operation may take.
    let limit: Duration
    private let clock: any Clock<Duration>
    private let stopwatch: Stopwatch

    init(context: ObjectIdentifier, limit: Duration, clock: any Clock<Duration>) {
        self.context = context
        self.limit = limit
        self.clock = clock
        stopwatch = Stopwatch(clock: clock)
    }

    /// Records that an operation starts now; `error` is what it fails with if it is still pending
    /// after ``limit``. Returns its token for ``ended(_:)``.
    func starts(failing error: @escaping @Sendable () -> OTAError) -> UInt64 {
        let (token, parked): (UInt64, CheckedContinuation<Void, Never>?) = state.withLock { state in
            state.nextID &+= 1
            // Read under the lock, so concurrent operations are stored in deadline order.
            state.pending.append(Pending(id: state.nextID, deadline: stopwatch.elapsed + limit, error: error))
            defer { state.parked = nil }
            return (state.nextID, state.parked)
        }
        parked?.resume()
        return token
    }

    /// Records that the operation of `token` returned (answered or failed).
    func ended(_ token: UInt64) {
        state.withLock { state in
            if let index = state.pending.firstIndex(where: { $0.id == token }) { state.pending.remove(at: index) }
        }
    }

    /// Runs `operation` bounded by this timer: the timer throws its `error` if it takes longer
    /// than ``limit``.
    func bound<T>(
        failing error: @escaping @Sendable () -> OTAError, _ operation: () async throws(OTAError) -> T
    ) async throws(OTAError) -> T {
        let token = starts(failing: error)
        defer { ended(token) }
        return try await operation()
    }

    /// Watches until cancelled; throws the timeout error of the first operation still pending at
    /// its deadline.
    func run() async throws {
        while true {
            let earliest = state.withLock { $0.pending.first?.deadline }
            guard let earliest else {
                await park()
                try Task.checkCancellation()
                continue
            }
            let now = stopwatch.elapsed
            if now < earliest { try await clock.sleep(for: earliest - now) }
            let after = stopwatch.elapsed
            let expired = state.withLock { state -> (@Sendable () -> OTAError)? in
                guard let first = state.pending.first, after >= first.deadline else { return nil }
                return first.error
            }
            if let expired { throw expired() }
        }
    }

    /// Waits until an operation is pending or the task is cancelled.
    private func park() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if !state.pending.isEmpty || Task.isCancelled { return true }
                    state.parked = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let parked = state.withLock { state in
                defer { state.parked = nil }
                return state.parked
            }
            parked?.resume()
        }
    }
}
