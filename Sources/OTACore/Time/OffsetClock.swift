/// A clock whose time reads as a `Duration` from an origin of its own, without its `Instant`
/// type: what ``Stopwatch`` reads when the clock it is given offers it.
///
/// Through `any Clock<Duration>` a reading goes through the clock's generic `Instant`: its type
/// looked up at run time, `now` and `duration(to:)` called through witnesses, about 200
/// instructions a reading. The engine reads its clock at every chunk (a run timer's deadline),
/// so its clocks offer this: ``RealTimeClock``, and the simulator's `VirtualClock`.
///
/// ```swift
/// let start = clock.offsetNow
/// // …
/// let elapsed = clock.offsetNow - start
/// ```
public protocol OffsetClock: Clock where Duration == Swift.Duration {
    /// The time from the clock's origin to ``Clock/now``; it never goes back, and two readings'
    /// difference is the `duration(to:)` of their instants.
    var offsetNow: Swift.Duration { get }
}
