/// A transport whose link is driven by timers on the caller's own executor, so that a task
/// waiting for what only those timers bring (a notification) can fire them itself, on its own
/// stack, instead of suspending until they resume it: the simulator's virtual-time link.
///
/// Optional, and only for such links: a radio's answers come from another thread, which no
/// waiting task can hurry. ``NotificationInbox/next(timeout:awaiting:)`` runs the link ahead
/// before it suspends when the transport offers this; everything happens at the same virtual
/// times and in the same order as if it had suspended, minus the suspension and the resumption
/// (decision 0071).
public protocol RunningAhead: Transport {
    /// Fires the link's pending timers on the calling task, in the order and at the times its
    /// executor would fire them next, until `answered()` holds; returns whether it does.
    ///
    /// It returns `false`, having fired what it fired, as soon as the executor would do
    /// anything else first (another task is runnable, work came from another thread, a stop),
    /// when no timer is left, when the next one is due `limit` or more after the call, or when
    /// the caller is not on the link's executor. The caller then suspends as it would have: the
    /// timers fired so far would have fired while it was suspended, in the same order.
    ///
    /// - Parameters:
    ///   - limit: how far ahead of now a timer may be and still be fired: the caller's own
    ///     deadline, so that its timeout fires exactly when it would have.
    ///   - answered: whether what the caller waits for has come; called after each timer.
    func runAhead(for limit: Duration, until answered: () -> Bool) -> Bool
}
