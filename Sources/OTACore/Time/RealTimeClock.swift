import Dispatch
import Synchronization

/// The clock of real devices: `ContinuousClock`'s time, with sleeps that give their timer back
/// the moment they are cancelled.
///
/// Give it wherever a device is reached in real time (``UpdateEngine``, a transport session, a
/// scanner): every time limit of the framework runs on it there, the way a test's or the
/// simulator's clock runs them in virtual time.
///
/// `ContinuousClock` would keep the same time, but on Linux a cancelled `Task.sleep` keeps its
/// timer (a task, a dispatch timer and a continuation, about 600 bytes) until its deadline
/// passes. ``withTimeout(_:clock:timeoutError:operation:)`` cancels its sleep whenever the
/// operation wins, so a fast link that makes thousands of timed waits a second piles up waits ×
/// timeout of them: 26 MB of a 64 MB image's update. Here each sleep is one `DispatchSourceTimer`
/// that cancellation cancels and releases at once (decision 0045), so the timers alive are the
/// waits in progress.
///
/// ```swift
/// let engine = UpdateEngine(clock: RealTimeClock())
/// ```
///
/// - Note: Copies share one count of live timers (``liveTimers``); two clocks made apart count
///   apart. Sleeping, cancelling and reading the count are safe from any task.
public struct RealTimeClock: Clock {
    public typealias Instant = ContinuousClock.Instant
    public typealias Duration = Swift.Duration

    private let live: LiveTimers

    /// Creates a clock with its own count of live timers.
    public init() {
        live = LiveTimers()
    }

    /// Now, on `ContinuousClock`.
    public var now: Instant { ContinuousClock.now }

    /// `ContinuousClock`'s resolution.
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// How many of this clock's timers dispatch still holds: one per sleep in progress, and for a
    /// moment after a sleep ends, until dispatch has let its timer go.
    public var liveTimers: Int { live.count.load(ordering: .relaxed) }

    /// Waits until `deadline`, or throws `CancellationError` as soon as the task is cancelled,
    /// releasing the timer then and there.
    ///
    /// A deadline already passed returns at once. The wait never ends before `deadline` on
    /// ``now``: a timer that fires early (dispatch keeps its own time) is set again for the rest.
    ///
    /// - Parameter tolerance: how late the wake-up may be, for the system to group timers;
    ///   none when `nil`.
    /// - Throws: `CancellationError` when the task is, or becomes, cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        guard ContinuousClock.now < deadline else { return }
        let timer = RealTimeTimer(deadline: deadline, leeway: tolerance ?? .zero, live: live)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { timer.start($0) }
        } onCancel: {
            timer.cancel()
        }
    }
}

/// The count of one clock's timers that dispatch holds, shared by the clock's copies.
private final class LiveTimers: Sendable {
    let count = Atomic<Int>(0)
}

/// One sleep: a dispatch timer that resumes the sleeper at its deadline, or throws
/// `CancellationError` into it at once when cancelled, whichever comes first; either way the timer
/// is cancelled and dispatch lets it go.
private final class RealTimeTimer: Sendable {
    private enum State {
        /// Made; the sleeper has not handed over its continuation yet.
        case idle
        /// The timer runs.
        case waiting(CheckedContinuation<Void, any Error>, any DispatchSourceTimer)
        /// Cancelled before it started: it never will.
        case cancelled
        /// Fired or cancelled, the sleeper resumed.
        case ended
    }

    private let deadline: ContinuousClock.Instant
    private let leeway: Duration
    private let live: LiveTimers
    private let state = Mutex(State.idle)

    init(deadline: ContinuousClock.Instant, leeway: Duration, live: LiveTimers) {
        self.deadline = deadline
        self.leeway = leeway
        self.live = live
    }

    /// Starts the timer, unless the sleep was cancelled first.
    func start(_ continuation: CheckedContinuation<Void, any Error>) {
        let refused = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard case .idle = state else { return continuation }
            let source = DispatchSource.makeTimerSource(queue: .global())
            let live = self.live
            live.count.add(1, ordering: .relaxed)
            // Dispatch calls the cancel handler once it is done with the source: the count then
            // says what dispatch still holds, not what was asked of it.
            source.setCancelHandler { live.count.subtract(1, ordering: .relaxed) }
            // The handler holds the timer until the source is cancelled, which every way out does.
            source.setEventHandler { self.fire() }
            source.schedule(deadline: Self.dispatchTime(after: ContinuousClock.now.duration(to: deadline)), leeway: Self.interval(leeway))
            source.activate()
            state = .waiting(continuation, source)
            return nil
        }
        refused?.resume(throwing: CancellationError())
    }

    /// The deadline came (on dispatch's time): resumes the sleeper, or sets the timer again for
    /// what is left on `ContinuousClock`.
    private func fire() {
        let due = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard case .waiting(let continuation, let source) = state else { return nil }
            let left = ContinuousClock.now.duration(to: deadline)
            if left > .zero {
                source.schedule(deadline: Self.dispatchTime(after: left), leeway: Self.interval(leeway))
                return nil
            }
            source.cancel()
            state = .ended
            return continuation
        }
        due?.resume()
    }

    /// The sleeping task was cancelled: stops the timer and throws `CancellationError` into the
    /// sleeper now, not at the deadline.
    func cancel() {
        let interrupted = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            switch state {
            case .idle:
                state = .cancelled
                return nil
            case .waiting(let continuation, let source):
                source.cancel()
                state = .ended
                return continuation
            case .cancelled, .ended:
                return nil
            }
        }
        interrupted?.resume(throwing: CancellationError())
    }

    private static func dispatchTime(after duration: Duration) -> DispatchTime {
        let nanoseconds = nanoseconds(duration)
        return nanoseconds == .max ? .distantFuture : .now() + .nanoseconds(nanoseconds)
    }

    private static func interval(_ duration: Duration) -> DispatchTimeInterval {
        .nanoseconds(nanoseconds(duration))
    }

    /// `duration` in whole nanoseconds, clamped to `0...Int.max`.
    private static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowAgain ? .max : Int(total)
    }
}
