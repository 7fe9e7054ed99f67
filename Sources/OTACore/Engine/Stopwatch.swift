/// Measures time elapsed since it was made, on any clock with `Duration` as its unit.
public struct Stopwatch: Sendable {
    private let read: @Sendable () -> Duration

    /// Starts measuring now on `clock`.
    public init(clock: any Clock<Duration>) {
        read = Self.start(clock)
    }

    private static func start<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// Time since the stopwatch was made.
    public var elapsed: Duration { read() }
}
