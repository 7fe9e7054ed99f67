/// A wait that grows by a factor at each step, up to a cap: the one rule behind
/// ``ResumePolicy/delay(beforeAttempt:)`` and ``FleetPolicy/backoff(afterAttempt:)``.
struct ExponentialBackoff: Sendable, Hashable {
    /// The first wait.
    var initial: Duration
    /// Each further wait is the previous one times this.
    var multiplier: Double
    /// The longest wait.
    var maximum: Duration

    /// Wait number `step` (1 for the first; less counts as 1): ``initial`` times ``multiplier``
    /// to the power `step − 1`, at most ``maximum``. Stops multiplying once at the cap, so a
    /// large `step` neither loops long nor overflows.
    func wait(_ step: Int) -> Duration {
        var wait = initial
        for _ in 1..<max(1, step) {
            wait = wait * multiplier
            if wait >= maximum { return maximum }
        }
        return min(wait, maximum)
    }
}
