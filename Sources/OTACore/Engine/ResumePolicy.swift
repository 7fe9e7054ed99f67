/// How the engine reconnects after a lost link: a protocol that can resume continues, another
/// one starts over from byte 0.
///
/// Delays grow from ``initialDelay`` by ``backoffMultiplier`` up to ``maximumDelay``. The engine
/// gives up after ``maximumAttempts`` reconnections in a row that brought no progress; an attempt
/// after which the device acknowledged more bytes resets the count. A restart from byte 0 never
/// counts as progress, so ``maximumAttempts`` bounds the restarts in a row.
public struct ResumePolicy: Sendable, Hashable {
    /// Reconnections in a row without progress before giving up. 0 disables resuming and
    /// restarting.
    public var maximumAttempts: Int = 5
    /// Delay before the first reconnection.
    public var initialDelay: Duration = .milliseconds(500)
    /// Longest delay between reconnections.
    public var maximumDelay: Duration = .seconds(8)
    /// Factor applied to the delay after each attempt without progress.
    public var backoffMultiplier: Double = 2
    /// Reconnections a protocol may ask for in a row (``UpdateOutcome/reconnect(reason:after:)``)
    /// without the device acknowledging more bytes, before the engine fails the update. These do
    /// not count as attempts, apply to every protocol and stay on when resuming is disabled.
    /// Default 4.
    public var maximumReconnectRequests: Int = 4

    /// The defaults: 5 attempts, 0.5 s doubling up to 8 s.
    public init() {}

    /// Never reconnect.
    public static var disabled: ResumePolicy {
        var policy = ResumePolicy()
        policy.maximumAttempts = 0
        return policy
    }

    /// The delay before attempt `attempt` (1-based).
    public func delay(beforeAttempt attempt: Int) -> Duration {
        ExponentialBackoff(initial: initialDelay, multiplier: backoffMultiplier, maximum: maximumDelay).wait(attempt)
    }
}
