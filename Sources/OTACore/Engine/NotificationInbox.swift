import Foundation
import Synchronization

/// Notifications from one characteristic, buffered in arrival order, read one at a time with a
/// timeout. Made by ``UpdateContext/withNotifications(from:_:)``.
///
/// Every wait's time limit runs on one long-lived timer of the inbox (`runTimer()`, a child
/// task of the notifications' scope), not a timer of its own: a wait stores its deadline, and the
/// timer, asleep until an earlier deadline, sleeps on to the current wait's when it wakes, or
/// ends that wait with a timeout when its deadline has passed. A protocol that awaits an answer
/// every few writes so arms no task and no clock timer per answer (decision 0058). The timer
/// sleeps at most the shortest limit a wait has had (the default limit until a shorter one
/// comes), so a wait finds it waking in time (decision 0065); only the first wait with a limit
/// shorter than any before, whose deadline comes before the timer's next wake, is bounded by
/// ``withTimeout(_:clock:timeoutError:operation:)``.
///
/// Over a transport that can run its link ahead (``RunningAhead``, the simulator), a wait first
/// fires the link's timers itself until the notification is in, and suspends only when that
/// stops short (decision 0071).
public final class NotificationInbox: Sendable {
    /// How a wait ended.
    private enum Arrival: Sendable {
        case value(Data)
        /// The link is down (or the task cancelled) and nothing is buffered.
        case closed
        /// The wait's deadline passed (on the inbox's timer).
        case timedOut
        /// The inbox's timer cannot wake in time for this wait's deadline: bound it apart.
        case needsOwnTimer
    }

    private struct State {
        var buffered: [Data] = []
        var waiter: CheckedContinuation<Arrival, Never>?
        /// The waiter's deadline on ``NotificationInbox/stopwatch``; `nil` while the waiter is
        /// bounded by its own timer, or when there is none.
        var deadline: Duration?
        /// When the timer is asleep until; `nil` while it is parked or deciding.
        var timerWake: Duration?
        /// The parked timer, resumed by the next wait with a deadline.
        var parkedTimer: CheckedContinuation<Void, Never>?
        /// The longest the timer sleeps at a time: the shortest limit a wait has had (the default
        /// limit before any shorter one).
        var longestSleep: Duration
        var closed = false

        /// Takes the waiter, with its deadline.
        mutating func takeWaiter() -> CheckedContinuation<Arrival, Never>? {
            defer {
                waiter = nil
                deadline = nil
            }
            return waiter
        }
    }

    private let state: Mutex<State>
    private let characteristic: CharacteristicID
    private let clock: any Clock<Duration>
    private let stopwatch: Stopwatch
    private let defaultTimeout: Duration
    /// The link, when a wait can run it ahead instead of suspending.
    private let runner: (any RunningAhead)?

    init(characteristic: CharacteristicID, clock: any Clock<Duration>, defaultTimeout: Duration, runner: (any RunningAhead)? = nil) {
        self.characteristic = characteristic
        self.clock = clock
        self.stopwatch = Stopwatch(clock: clock)
        self.defaultTimeout = defaultTimeout
        self.runner = runner
        state = Mutex(State(longestSleep: defaultTimeout))
    }

    /// Whether a wait is pending (a caller of ``next(timeout:awaiting:)`` suspended for the next
    /// notification).
    var isWaiting: Bool { state.withLock { $0.waiter != nil } }

    func deliver(_ value: Data) {
        let waiter: CheckedContinuation<Arrival, Never>? = state.withLock { state in
            if let waiter = state.takeWaiter() { return waiter }
            state.buffered.append(value)
            return nil
        }
        waiter?.resume(returning: .value(value))
    }

    func close() {
        let (waiter, timer) = state.withLock { state in
            state.closed = true
            defer { state.parkedTimer = nil }
            return (state.takeWaiter(), state.parkedTimer)
        }
        waiter?.resume(returning: .closed)
        timer?.resume()
    }

    // MARK: - The timer

    /// What the timer does next.
    private enum TimerStep {
        case park
        case sleep(until: Duration)
        case fire(CheckedContinuation<Arrival, Never>)
        case stop
    }

    /// The inbox's one timer: ends the current wait with a timeout once its deadline passes.
    /// Runs until the inbox closes or the task is cancelled.
    func runTimer() async {
        while true {
            let now = stopwatch.elapsed
            let step: TimerStep = state.withLock { state in
                if state.closed { return .stop }
                guard let deadline = state.deadline else {
                    state.timerWake = nil
                    return .park
                }
                if now >= deadline {
                    guard let waiter = state.takeWaiter() else {
                        state.timerWake = nil
                        return .park
                    }
                    return .fire(waiter)
                }
                // Never asleep for longer than the shortest limit a wait has had: a wait with that
                // limit or a longer one, stored while the timer sleeps, then never ends before
                // its wake, so neither a long wait (a slot erase) nor a long limit before a short
                // one (a response, then a packet receipt) leaves a wait to a timer of its own.
                let wake = min(deadline, now + state.longestSleep)
                state.timerWake = wake
                return .sleep(until: wake)
            }
            switch step {
            case .stop:
                return
            case .fire(let waiter):
                waiter.resume(returning: .timedOut)
            case .sleep(let wake):
                do {
                    try await clock.sleep(for: wake - now)
                } catch {
                    return
                }
            case .park:
                await park()
                if Task.isCancelled { return }
            }
        }
    }

    /// Waits until a wait with a deadline is stored, the inbox closes, or the task is cancelled.
    private func park() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.closed || state.deadline != nil || Task.isCancelled { return true }
                    state.parkedTimer = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let timer = state.withLock { state in
                defer { state.parkedTimer = nil }
                return state.parkedTimer
            }
            timer?.resume()
        }
    }

    // MARK: - Waiting

    /// The next notification; with a `limit`, until `deadline` (on ``stopwatch``) on the inbox's
    /// timer.
    private func receive(limit: Duration?, deadline: Duration?) async -> Arrival {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Arrival, Never>) in
                let (immediate, timer): (Arrival?, CheckedContinuation<Void, Never>?) = state.withLock { state in
                    if !state.buffered.isEmpty { return (.value(state.buffered.removeFirst()), nil) }
                    if state.closed || Task.isCancelled { return (.closed, nil) }
                    if let limit, let deadline {
                        if limit < state.longestSleep { state.longestSleep = limit }
                        // The timer, asleep until `timerWake`, sees this deadline only then.
                        if let wake = state.timerWake, wake > deadline { return (.needsOwnTimer, nil) }
                        state.deadline = deadline
                    }
                    state.waiter = continuation
                    defer { state.parkedTimer = nil }
                    return (nil, deadline == nil ? nil : state.parkedTimer)
                }
                if let immediate { continuation.resume(returning: immediate) }
                timer?.resume()
            }
        } onCancel: {
            let waiter = state.withLock { $0.takeWaiter() }
            waiter?.resume(returning: .closed)
        }
    }

    /// The oldest notification not yet taken, taken.
    private func takeBuffered() -> Data? {
        state.withLock { $0.buffered.isEmpty ? nil : $0.buffered.removeFirst() }
    }

    /// The error of a wait for `purpose` that ran out after `limit`.
    private func timedOut(after limit: Duration, awaiting purpose: String) -> OTAError {
        OTAError(
            .timeout,
            "timed out after \(limit.humanReadable) waiting for the \(purpose) on \(characteristic.characteristic); is the device running the update service, and is it powered and in range?"
        )
    }

    /// Waits for the next notification.
    ///
    /// - Parameters:
    ///   - timeout: how long to wait; the configured response timeout when `nil`.
    ///   - purpose: what is awaited, for the error message ("START response").
    /// - Throws: ``OTAError/Code/timeout`` naming `purpose`, or ``OTAError/Code/disconnected``
    ///   when the link goes down first.
    ///
    /// `purpose` is evaluated only when an error names it: a driver may describe each wait with
    /// interpolated text (a sequence number, a sector) at no cost while the answers come.
    public func next(timeout: Duration? = nil, awaiting purpose: @autoclosure @Sendable () -> String) async throws(OTAError) -> Data {
        // A notification that already arrived is the answer, as a device that answers a burst of
        // requests at once leaves several here.
        if let ready = takeBuffered() { return ready }
        let limit = timeout ?? defaultTimeout
        // The deadline is taken before running ahead, so that the wait ends when it would have.
        let deadline = stopwatch.elapsed + limit
        if let runner, runner.runAhead(for: limit, until: { state.withLock { !$0.buffered.isEmpty || $0.closed } }),
            let ready = takeBuffered()
        {
            return ready
        }
        var arrival = await receive(limit: limit, deadline: deadline)
        if case .needsOwnTimer = arrival {
            let described = purpose()
            do {
                let remaining = max(deadline - stopwatch.elapsed, .zero)
                arrival = try await withTimeout(remaining, clock: clock, timeoutError: timedOut(after: limit, awaiting: described)) {
                    [self] in
                    await receive(limit: nil, deadline: nil)
                }
            } catch {
                throw OTAError.wrapping(error, context: "waiting for the \(described)")
            }
        }
        switch arrival {
        case .value(let value):
            return value
        case .timedOut:
            throw timedOut(after: limit, awaiting: purpose())
        case .closed, .needsOwnTimer:
            if Task.isCancelled { throw OTAError(.cancelled, "cancelled while waiting for the \(purpose())") }
            throw OTAError(.disconnected, "link lost while waiting for the \(purpose())")
        }
    }
}
