import Foundation
import Synchronization

/// Cancels `task` from a thread of its own `delay` seconds of wall time from now, and waits, at
/// most `bound`, for it to end: whether it did.
///
/// For tests that race a cancellation against a transport's own work (decisions 0079 and 0080):
/// the runtime runs the task's cancellation handlers on the cancelling thread, holding the task's
/// lock, so a handler that deadlocks blocks that thread. Cancelling from a thread of its own, and
/// waiting with a bound in wall time, makes such a hang a failed expectation rather than a test
/// process that never ends (the pool's threads stay free for the waiting).
public func cancel<Success: Sendable, Failure: Error>(
    _ task: Task<Success, Failure>, after delay: Double = 0, endsWithin bound: Duration = .seconds(10)
) async -> Bool {
    Thread.detachNewThread {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        task.cancel()
    }
    return await ends(task, within: bound)
}

/// Waits, at most `bound` of wall time, for `task` to end: whether it did. The wait itself never
/// hangs with the task (a detached task awaits it and raises a flag, which this polls).
public func ends<Success: Sendable, Failure: Error>(_ task: Task<Success, Failure>, within bound: Duration) async -> Bool {
    let done = EndFlag()
    Task.detached {
        _ = await task.result
        done.set()
    }
    let deadline = ContinuousClock.now + bound
    while !done.isSet, ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(5))
    }
    return done.isSet
}

private final class EndFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
