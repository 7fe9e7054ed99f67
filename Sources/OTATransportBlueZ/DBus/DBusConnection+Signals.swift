#if os(Linux)
extension DBusConnection {
    /// One stream of signals and the rule that feeds it.
    struct Subscription {
        let rule: DBusMatchRule
        let continuation: AsyncStream<DBusMessage>.Continuation
    }

    /// Subscribes to the messages that match `rule`, usually signals.
    ///
    /// ```swift
    /// let changes = try await bus.signals(matching: DBusMatchRule(
    ///     sender: "org.bluez", path: characteristicPath,
    ///     interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"))
    /// for await signal in changes { … }
    /// ```
    ///
    /// The rule is added to the bus (`AddMatch`) before this returns, so every matching signal
    /// sent afterwards is delivered, in order. The stream buffers without limit; read it promptly.
    ///
    /// - Returns: a stream that finishes when the connection closes. When it ends or is dropped,
    ///   the rule is removed from the bus (`RemoveMatch`).
    /// - Throws: ``DBusError`` when the connection is closed or the bus rejects the rule.
    func signals(matching rule: DBusMatchRule) async throws -> AsyncStream<DBusMessage> {
        let id = makeID()
        let (stream, continuation) = AsyncStream.makeStream(of: DBusMessage.self, bufferingPolicy: .unbounded)
        subscriptions[id] = Subscription(rule: rule, continuation: continuation)
        do {
            _ = try await callBus("AddMatch", [.string(rule.description)])
        } catch {
            subscriptions[id] = nil
            continuation.finish()
            throw error
        }
        guard subscriptions[id] != nil else {
            // Closed while adding the rule; the stream is already finished.
            throw DBusError.connectionClosed
        }
        continuation.onTermination = { _ in
            Task { await self.unsubscribe(id) }
        }
        return stream
    }

    /// Gives a signal to every subscription whose rule it matches.
    func deliver(signal: DBusMessage) {
        for subscription in subscriptions.values where subscription.rule.matches(signal) {
            subscription.continuation.yield(signal)
        }
    }

    /// Ends a subscription whose stream terminated, and removes its rule from the bus.
    private func unsubscribe(_ id: UInt64) {
        guard let subscription = subscriptions.removeValue(forKey: id), isConnected else { return }
        var removal = Self.busMethod("RemoveMatch", [.string(subscription.rule.description)])
        removal.noReplyExpected = true
        _ = try? send(removal)
    }

    /// The number of live subscriptions (for tests).
    var subscriptionCount: Int { subscriptions.count }
}
#endif
