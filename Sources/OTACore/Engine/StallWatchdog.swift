import Synchronization

/// The watchdog of one ``UpdateContext/withStallWatchdog(_:)`` scope: fails the transfer when no
/// data write completes during a whole stall period, and ends a with-response data write that
/// waits longer than the response timeout for its acknowledgement.
///
/// The second duty is the stall check's timer doing double work (decision 0058): a data write
/// stores its deadline here, and the watchdog, which sleeps until its next check anyway, wakes
/// at that deadline instead when it comes first. A write so costs two short locks instead of a
/// task group, two child tasks and a timer of its own (``withTimeout(_:clock:timeoutError:operation:)``),
/// and fails with the same error at the same time. That holds while the response timeout is at
/// least the stall period: a write's deadline then never comes before the watchdog's next wake,
/// so the watchdog never needs waking early. With a shorter response timeout the writes bound
/// themselves as before (``boundsWrites``).
final class StallWatchdog: Sendable {
    /// The watchdog of the scope the current task runs in.
    @TaskLocal static var current: StallWatchdog?

    private struct PendingWrite {
        var id: UInt64
        var deadline: Duration
        var offset: Int
    }

    private struct State {
        var pending: PendingWrite?
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    /// The context whose writes this watchdog bounds.
    let context: ObjectIdentifier
    private let stallTimeout: Duration
    private let responseTimeout: Duration
    private let clock: any Clock<Duration>
    private let stopwatch: Stopwatch

    init(context: ObjectIdentifier, stallTimeout: Duration, responseTimeout: Duration, clock: any Clock<Duration>) {
        self.context = context
        self.stallTimeout = stallTimeout
        self.responseTimeout = responseTimeout
        self.clock = clock
        stopwatch = Stopwatch(clock: clock)
    }

    /// Whether with-response data writes are bounded here rather than by a time limit each.
    var boundsWrites: Bool { responseTimeout >= stallTimeout }

    /// Records that a with-response data write of the bytes at `offset` starts now; returns its
    /// token for ``writeEnded(_:)``.
    func writeStarts(at offset: Int) -> UInt64 {
        let deadline = stopwatch.elapsed + responseTimeout
        return state.withLock { state in
            state.nextID &+= 1
            state.pending = PendingWrite(id: state.nextID, deadline: deadline, offset: offset)
            return state.nextID
        }
    }

    /// Records that the write of `token` returned (acknowledged or failed).
    func writeEnded(_ token: UInt64) {
        state.withLock { state in
            if state.pending?.id == token { state.pending = nil }
        }
    }

    /// Watches until cancelled; throws the stall, or the timeout of the write that waited too
    /// long.
    ///
    /// - Parameters:
    ///   - writesCompleted: the count of data writes completed so far.
    ///   - stalled: the stall error, made when the count did not move for a whole period.
    func run(writesCompleted: () -> Int, stalled: () -> OTAError) async throws {
        var seen = -1
        var check = stopwatch.elapsed + stallTimeout
        while true {
            let before = stopwatch.elapsed
            let deadline = state.withLock { $0.pending?.deadline }
            try await clock.sleep(for: min(check, deadline ?? check) - before)
            let now = stopwatch.elapsed
            if now >= check {
                let writes = writesCompleted()
                if writes == seen { throw stalled() }
                seen = writes
                check += stallTimeout
            }
            let expired = state.withLock { state -> Int? in
                guard let pending = state.pending, now >= pending.deadline else { return nil }
                return pending.offset
            }
            if let offset = expired {
                throw UpdateContext.describe(
                    UpdateContext.acknowledgementTimedOut(after: responseTimeout, for: "data at byte \(offset)"),
                    doing: "writing data at byte \(offset)"
                )
            }
        }
    }
}
