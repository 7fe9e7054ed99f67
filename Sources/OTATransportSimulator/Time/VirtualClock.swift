import OTACore

/// A clock that reads and waits on a ``VirtualTimeExecutor``'s virtual time.
///
/// Sleeping registers a timer with the executor; the sleep ends when the executor has nothing
/// else to run and advances time to it. Cancellation ends a sleep at once with
/// `CancellationError`.
public struct VirtualClock: OffsetClock, Sendable {
    /// A point in virtual time, measured from the start of the simulation.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable {
        /// Time since the simulation started.
        public var offset: Duration

        /// Creates an instant.
        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    let executor: VirtualTimeExecutor

    init(executor: VirtualTimeExecutor) { self.executor = executor }

    public var now: Instant { Instant(offset: executor.now) }

    /// ``OffsetClock``: virtual time since the simulation started, ``now``'s offset.
    public var offsetNow: Duration { executor.now }

    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        guard deadline.offset > executor.now else { return }
        try await executor.sleep(until: deadline.offset)
    }
}
