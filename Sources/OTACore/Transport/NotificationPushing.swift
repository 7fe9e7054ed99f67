import Foundation

/// A transport that can hand notifications straight to a receiver as they arrive, instead of
/// through the `AsyncStream` of ``Transport/notifications(from:)`` and a task reading it.
///
/// Optional: ``UpdateContext/withNotifications(from:_:)`` uses it when the transport offers it and
/// the stream otherwise, with the same results. A value then reaches the waiting protocol in one
/// task hop rather than two (the stream's reader woken, then the waiter), which is most of what
/// a notification costs the host when a protocol awaits one every write or two (decision 0066).
///
/// - Important: `receiver` runs in the transport's own context (its lock may be held, its
///   executor is running), so it must return at once: store the value, resume a continuation,
///   nothing that waits or calls back into the transport.
public protocol NotificationPushing: Transport {
    /// Enables notifications on a characteristic and calls `receiver` with each value, in the
    /// order they arrive, until the link goes down (then ``NotificationReceiver/finished``, once),
    /// or until the subscription ends (``NotificationSubscription/cancel()``, after which the
    /// receiver is called no more; ending the subscription disables notifications).
    ///
    /// - Throws: as ``Transport/notifications(from:)``.
    func pushNotifications(
        from characteristic: CharacteristicID, to receiver: NotificationReceiver
    ) async throws(TransportError)
        -> NotificationSubscription
}

/// Where a ``NotificationPushing`` transport hands notifications.
public struct NotificationReceiver: Sendable {
    /// Takes one value; called in arrival order, never concurrently with itself.
    public let receive: @Sendable (Data) -> Void
    /// The link went down (or another subscription to the characteristic replaced this one): no
    /// value follows. Called at most once.
    public let finished: @Sendable () -> Void

    /// A receiver.
    public init(receive: @escaping @Sendable (Data) -> Void, finished: @escaping @Sendable () -> Void) {
        self.receive = receive
        self.finished = finished
    }
}

/// A subscription made by ``NotificationPushing/pushNotifications(from:to:)``.
public struct NotificationSubscription: Sendable {
    private let end: @Sendable () -> Void

    /// A subscription that `end` ends (it must be safe to call more than once).
    public init(cancel end: @escaping @Sendable () -> Void) { self.end = end }

    /// Ends the subscription: the receiver is called no more, and notifications are disabled.
    /// Safe to call more than once, and after the link went down.
    public func cancel() { end() }
}

/// Where a transport sends one subscription's notifications: the stream it returned from
/// ``Transport/notifications(from:)``, or the receiver given to
/// ``NotificationPushing/pushNotifications(from:to:)``. What a transport that offers both keeps
/// per subscription.
public enum NotificationSubscriber: Sendable {
    /// The continuation of a stream returned by ``Transport/notifications(from:)``.
    case stream(AsyncStream<Data>.Continuation)
    /// A receiver given to ``NotificationPushing/pushNotifications(from:to:)``.
    case push(NotificationReceiver)

    /// Hands on one notification.
    public func deliver(_ value: Data) {
        switch self {
        case .stream(let continuation): continuation.yield(value)
        case .push(let receiver): receiver.receive(value)
        }
    }

    /// No notification follows: the stream finishes, or the receiver is told.
    public func finish() {
        switch self {
        case .stream(let continuation): continuation.finish()
        case .push(let receiver): receiver.finished()
        }
    }

    /// ``Transport/notifications(from:)`` for a transport that keeps ``NotificationSubscriber``s:
    /// a stream whose subscriber `subscribe` files (returning what ends that subscription), ended
    /// when the stream's iteration ends.
    public static func stream(
        subscribing subscribe: (NotificationSubscriber) async throws(TransportError) -> @Sendable () -> Void
    ) async throws(TransportError) -> AsyncStream<Data> {
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
        let end = try await subscribe(.stream(continuation))
        continuation.onTermination = { _ in end() }
        return stream
    }
}
