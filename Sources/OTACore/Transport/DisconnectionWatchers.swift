/// The watchers of one link's ``Transport/disconnections``, and why the link went down: each
/// watcher is told the reason once, then its stream finishes; one that comes after the link
/// went down is told at once.
///
/// A transport keeps one under its own lock (or on its queue) and asks it whether the link is
/// down (``reason``):
///
/// ```swift
/// var disconnections: AsyncStream<DisconnectReason> { state.withLock { $0.watchers.watch() } }
///
/// func drop(_ reason: DisconnectReason) {
///     guard let notice = state.withLock({ $0.watchers.markDown(reason) }) else { return }
///     // … fail what waits, finish the notification streams …
///     notice.deliver()
/// }
/// ```
public struct DisconnectionWatchers: Sendable {
    /// Why the link went down; `nil` while it is up.
    public private(set) var reason: DisconnectReason?
    private var waiting: [AsyncStream<DisconnectReason>.Continuation] = []

    /// Watchers of a link that is up.
    public init() {}

    /// A new watcher's stream: it yields the reason when the link goes down and then finishes
    /// (at once when it is down already).
    public mutating func watch() -> AsyncStream<DisconnectReason> {
        let (stream, continuation) = AsyncStream.makeStream(of: DisconnectReason.self)
        if let reason {
            continuation.yield(reason)
            continuation.finish()
        } else {
            waiting.append(continuation)
        }
        return stream
    }

    /// Marks the link down with `reason` and hands back what to tell the watchers, to be
    /// delivered once the transport has settled the rest (outside its lock); `nil` when the link
    /// was down already (the first reason stands, and nobody is told twice).
    public mutating func markDown(_ reason: DisconnectReason) -> Notice? {
        guard self.reason == nil else { return nil }
        self.reason = reason
        defer { waiting = [] }
        return Notice(reason: reason, watchers: waiting)
    }

    /// The reason a link went down, for the watchers it had then.
    public struct Notice: Sendable {
        /// Why the link went down.
        public let reason: DisconnectReason
        let watchers: [AsyncStream<DisconnectReason>.Continuation]

        /// Gives each watcher the reason and finishes its stream.
        public func deliver() {
            for watcher in watchers {
                watcher.yield(reason)
                watcher.finish()
            }
        }
    }
}
