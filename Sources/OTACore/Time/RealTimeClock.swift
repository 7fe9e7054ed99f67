import Dispatch
import Synchronization

/// The clock of real devices: `ContinuousClock`'s time, with sleeps that let go of everything
/// they hold the moment they are cancelled.
///
/// Give it wherever a device is reached in real time (``UpdateEngine``, a transport session, a
/// scanner): every time limit of the framework runs on it there, the way a test's or the
/// simulator's clock runs them in virtual time.
///
/// `ContinuousClock` would keep the same time, but on Linux a cancelled `Task.sleep` keeps its
/// timer (a task, a dispatch timer and a continuation, about 600 bytes) until its deadline
/// passes. ``withTimeout(_:clock:timeoutError:operation:)`` cancels its sleep whenever the
/// operation wins, so a fast link that makes thousands of timed waits a second piled up waits ×
/// timeout of them: 26 MB of a 64 MB image's update. Here a sleep is an entry in the clock's
/// list of sleepers, kept in deadline order, and one dispatch timer per clock wakes the earliest
/// (decision 0045). A cancelled sleep leaves the list, its continuation resumed with
/// `CancellationError`, at once; a sleep costs no system call unless it is the new earliest.
///
/// ```swift
/// let engine = UpdateEngine(clock: RealTimeClock())
/// ```
///
/// - Note: Copies share one list of sleepers (and ``pendingSleeps``); make one clock for a
///   session or a process and pass it on. Clocks made apart count apart. Sleeping, cancelling and
///   reading the count are safe from any task.
public struct RealTimeClock: OffsetClock {
    /// `ContinuousClock`'s instants: its time is that clock's.
    public typealias Instant = ContinuousClock.Instant
    /// Durations as every other clock of the framework measures them.
    public typealias Duration = Swift.Duration

    private let sleepers: RealTimeSleepers

    /// Creates a clock with its own list of sleepers and its own dispatch timer.
    public init() {
        sleepers = RealTimeSleepers()
    }

    /// Now, on `ContinuousClock`.
    public var now: Instant { ContinuousClock.now }

    /// ``OffsetClock``: the time since an origin taken once per process.
    public var offsetNow: Duration { Self.origin.duration(to: ContinuousClock.now) }

    private static let origin = ContinuousClock.now

    /// `ContinuousClock`'s resolution.
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// How many sleeps on this clock are waiting. A sleep leaves the count, and lets go of its
    /// continuation, before it returns or throws: a cancelled one at once, not at its deadline.
    public var pendingSleeps: Int { sleepers.count }

    /// Waits until `deadline`, or throws `CancellationError` as soon as the task is cancelled.
    ///
    /// A deadline already passed returns at once. The wait never ends before `deadline` on
    /// ``now``: a wake-up that comes early (dispatch keeps its own time) sets the timer again for
    /// the rest.
    ///
    /// - Parameter tolerance: ignored: the clock's one timer wakes each sleeper at its deadline.
    /// - Throws: `CancellationError` when the task is, or becomes, cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        guard ContinuousClock.now < deadline else { return }
        let sleepers = self.sleepers
        let id = sleepers.newID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                sleepers.add(id: id, deadline: deadline, continuation)
            }
        } onCancel: {
            sleepers.cancel(id: id, deadline: deadline)
        }
    }
}

/// One clock's sleepers in deadline order, and the dispatch timer set for the earliest.
private final class RealTimeSleepers: Sendable {
    private struct Sleeper {
        let deadline: ContinuousClock.Instant
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>

        /// Whether this sleeper wakes before one of `deadline` and `id` (ties go by arrival).
        func precedes(_ deadline: ContinuousClock.Instant, _ id: UInt64) -> Bool {
            self.deadline < deadline || (self.deadline == deadline && self.id < id)
        }
    }

    private struct State {
        /// Sorted by deadline, then id. A clock's time limits mostly share one length, so a new
        /// sleeper mostly goes at the end and the one that ends goes from the front: both cheap
        /// for the few waits a session has at once.
        var sleepers: [Sleeper] = []
        /// When the timer is set to fire; `nil` when it is not set.
        var wake: ContinuousClock.Instant?
        let timer: any DispatchSourceTimer
    }

    private let state: Mutex<State>
    private let ids = Atomic<UInt64>(0)

    init() {
        state = Mutex(State(timer: DispatchSource.makeTimerSource(queue: .global())))
        state.withLock { state in
            // Weak: the timer's handler must not keep the clock alive; deinit cancels the timer.
            state.timer.setEventHandler { [weak self] in self?.fire() }
            state.timer.activate()
        }
    }

    deinit {
        state.withLock { $0.timer.cancel() }
    }

    /// The sleepers in the list, counted there (not kept apart), so the count is what is held.
    var count: Int { state.withLock { $0.sleepers.count } }

    func newID() -> UInt64 {
        ids.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Adds a sleeper, unless its task was cancelled first (its cancellation handler then found
    /// nothing to remove): the check and the insertion are under the lock the handler takes.
    func add(id: UInt64, deadline: ContinuousClock.Instant, _ continuation: CheckedContinuation<Void, any Error>) {
        let refused = state.withLock { state -> Bool in
            if Task.isCancelled { return true }
            var index = state.sleepers.endIndex
            if let last = state.sleepers.last, !last.precedes(deadline, id) {
                index = Self.firstIndex(in: state.sleepers, notPreceding: deadline, id)
            }
            state.sleepers.insert(Sleeper(deadline: deadline, id: id, continuation: continuation), at: index)
            if state.wake.map({ deadline < $0 }) ?? true {
                Self.set(state.timer, for: deadline)
                state.wake = deadline
            }
            return false
        }
        if refused { continuation.resume(throwing: CancellationError()) }
    }

    /// Removes a cancelled sleeper and throws `CancellationError` into it; nothing when it has
    /// woken already or was never added.
    func cancel(id: UInt64, deadline: ContinuousClock.Instant) {
        let removed = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            let index = Self.firstIndex(in: state.sleepers, notPreceding: deadline, id)
            guard index < state.sleepers.endIndex, state.sleepers[index].id == id else { return nil }
            // The timer stays set: when it fires with nothing due it is set for the earliest.
            return state.sleepers.remove(at: index).continuation
        }
        removed?.resume(throwing: CancellationError())
    }

    /// The timer fired: wakes every sleeper whose deadline has passed on `ContinuousClock`, and
    /// sets the timer for the earliest left.
    private func fire() {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            let now = ContinuousClock.now
            let dueCount = state.sleepers.prefix { $0.deadline <= now }.count
            let due = state.sleepers.prefix(dueCount).map(\.continuation)
            state.sleepers.removeFirst(dueCount)
            state.wake = state.sleepers.first?.deadline
            if let wake = state.wake { Self.set(state.timer, for: wake) }
            return due
        }
        for continuation in due { continuation.resume() }
    }

    /// The index of the first sleeper that does not wake before `deadline` and `id`.
    private static func firstIndex(in sleepers: [Sleeper], notPreceding deadline: ContinuousClock.Instant, _ id: UInt64) -> Int {
        var (low, high) = (sleepers.startIndex, sleepers.endIndex)
        while low < high {
            let middle = low + (high - low) / 2
            if sleepers[middle].precedes(deadline, id) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private static func set(_ timer: any DispatchSourceTimer, for deadline: ContinuousClock.Instant) {
        timer.schedule(deadline: dispatchTime(after: ContinuousClock.now.duration(to: deadline)), leeway: .nanoseconds(0))
    }

    private static func dispatchTime(after duration: Duration) -> DispatchTime {
        let nanoseconds = nanoseconds(duration)
        return nanoseconds == .max ? .distantFuture : .now() + .nanoseconds(nanoseconds)
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
