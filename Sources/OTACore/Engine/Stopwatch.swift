/// Measures time elapsed since it was made, on any clock with `Duration` as its unit.
public struct Stopwatch: Sendable {
    private let read: @Sendable () -> Duration

    /// Starts measuring now on `clock`.
    ///
    /// A clock that offers ``OffsetClock`` is read through it (one witness call a reading);
    /// any other through its generic `Instant`.
    public init(clock: any Clock<Duration>) {
        if let clock = clock as? any OffsetClock {
            let start = clock.offsetNow
            read = { clock.offsetNow - start }
        } else {
            read = Self.start(clock)
        }
    }

    private static func start<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// Time since the stopwatch was made.
    public var elapsed: Duration { read() }
}
