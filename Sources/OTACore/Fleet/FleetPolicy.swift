/// How a fleet run treats failures: how often a device is tried and how long it waits between
/// tries.
public struct FleetPolicy: Sendable, Hashable {
    /// Most attempts per device, the first included; a device that fails this often is reported
    /// failed and left alone.
    public var maximumAttempts: Int
    /// Wait before the second attempt.
    public var initialBackoff: Duration
    /// Each further wait is the previous one times this.
    public var backoffMultiplier: Double
    /// The longest wait between attempts.
    public var maximumBackoff: Duration

    /// Creates a policy: 3 attempts, waits of 2 s, 4 s, … up to 60 s by default.
    public init(
        maximumAttempts: Int = 3, initialBackoff: Duration = .seconds(2), backoffMultiplier: Double = 2, maximumBackoff: Duration = .seconds(60)
    ) {
        precondition(maximumAttempts >= 1, "a device is tried at least once")
        self.maximumAttempts = maximumAttempts
        self.initialBackoff = initialBackoff
        self.backoffMultiplier = backoffMultiplier
        self.maximumBackoff = maximumBackoff
    }

    /// The wait after failed attempt number `attempt` (1 for the first).
    public func backoff(afterAttempt attempt: Int) -> Duration {
        ExponentialBackoff(initial: initialBackoff, multiplier: backoffMultiplier, maximum: maximumBackoff).wait(attempt)
    }
}

/// One radio a fleet run connects through: a controller that holds a handful of connections.
public struct FleetAdapter: Sendable, Hashable {
    /// Its name ("hci0"); devices name the adapters that reach them.
    public var name: String
    /// The most connections the scheduler opens through it at once: the controller's limit.
    public var connectionLimit: Int

    /// Creates an adapter description.
    public init(name: String, connectionLimit: Int) {
        precondition(connectionLimit >= 1, "an adapter holds at least one connection")
        self.name = name
        self.connectionLimit = connectionLimit
    }
}
