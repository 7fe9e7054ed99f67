#if os(Linux)
import Testing

@testable import OTATransportBlueZ

/// Signal subscriptions on a private bus.
@Suite(.needsLibDBus) struct DBusSignalTests {
    private static func signal(
        _ member: String,
        interface: String = TestService.interface,
        path: DBusObjectPath = "/com/example/Emitter",
        _ text: String
    ) -> DBusMessage {
        .signal(path: path, interface: interface, member: member, arguments: [.string(text)])
    }

    @Test func aSubscriptionReceivesOnlyMatchingSignalsInOrder() async throws {
        try await PrivateBus.with { bus in
            let emitter = try await bus.connect()
            let listener = try await bus.connect()
            let pings = try await listener.signals(
                matching: DBusMatchRule(interface: TestService.interface, member: "Ping")
            )
            // A broader subscription makes the bus route Pong and other interfaces to the listener too.
            let everything = try await listener.signals(matching: DBusMatchRule(sender: emitter.uniqueName))

            try await emitter.send(Self.signal("Ping", "1"))
            try await emitter.send(Self.signal("Pong", "not a ping"))
            try await emitter.send(Self.signal("Ping", interface: "com.example.Other", "other interface"))
            try await emitter.send(Self.signal("Ping", "2"))
            try await emitter.send(Self.signal("Ping", "last"))

            var received: [String] = []
            for await signal in pings {
                #expect(signal.sender == emitter.uniqueName)
                #expect(signal.path == "/com/example/Emitter")
                received.append(signal.arguments.first?.string ?? "?")
                if received.last == "last" { break }
            }
            #expect(received == ["1", "2", "last"])

            var all: [String] = []
            for await signal in everything {
                all.append(signal.arguments.first?.string ?? "?")
                if all.count == 5 { break }
            }
            #expect(all == ["1", "not a ping", "other interface", "2", "last"])
            await listener.close()
            await emitter.close()
        }
    }

    @Test func rulesFilterByPathNamespaceAndArgument() async throws {
        try await PrivateBus.with { bus in
            let emitter = try await bus.connect()
            let listener = try await bus.connect()
            let below = try await listener.signals(
                matching: DBusMatchRule(pathNamespace: "/org/bluez/hci0", arguments: [0: "yes"])
            )
            try await emitter.send(Self.signal("S", path: "/org/bluez/hci1", "yes"))
            try await emitter.send(Self.signal("S", path: "/org/bluez/hci0/dev_1", "no"))
            try await emitter.send(Self.signal("S", path: "/org/bluez/hci0/dev_1", "yes"))
            var iterator = below.makeAsyncIterator()
            let first = await iterator.next()
            #expect(first?.path == "/org/bluez/hci0/dev_1")
            #expect(first?.arguments == [.string("yes")])
            await listener.close()
            await emitter.close()
        }
    }

    @Test func droppingTheStreamRemovesTheMatchRule() async throws {
        try await PrivateBus.with { bus in
            let emitter = try await bus.connect()
            let listener = try await bus.connect()
            let rulesBefore = await bus.matchRuleCount(of: listener.uniqueName, askingWith: emitter)

            var stream: AsyncStream<DBusMessage>? = try await listener.signals(matching: DBusMatchRule(member: "Ping"))
            #expect(await listener.subscriptionCount == 1)
            if let rulesBefore {
                #expect(await bus.matchRuleCount(of: listener.uniqueName, askingWith: emitter) == rulesBefore + 1)
            }
            try await emitter.send(Self.signal("Ping", "while subscribed"))
            var iterator = stream?.makeAsyncIterator()
            #expect(await iterator?.next()?.arguments == [.string("while subscribed")])

            iterator = nil
            stream = nil
            #expect(await eventually { await listener.subscriptionCount == 0 })
            if let rulesBefore {
                #expect(
                    await eventually {
                        await bus.matchRuleCount(of: listener.uniqueName, askingWith: emitter) == rulesBefore
                    }
                )
            }
            await listener.close()
            await emitter.close()
        }
    }

    @Test func cancellingTheConsumerEndsTheSubscription() async throws {
        try await PrivateBus.with { bus in
            let listener = try await bus.connect()
            let stream = try await listener.signals(matching: DBusMatchRule(member: "Ping"))
            let consumer = Task { for await _ in stream {} }
            consumer.cancel()
            await consumer.value
            #expect(await eventually { await listener.subscriptionCount == 0 })
            await listener.close()
        }
    }

    @Test func closingFinishesStreams() async throws {
        try await PrivateBus.with { bus in
            let listener = try await bus.connect()
            let stream = try await listener.signals(matching: DBusMatchRule(member: "Ping"))
            await listener.close()
            for await _ in stream { Issue.record("no signal expected") }
            await #expect(throws: DBusError.connectionClosed) {
                _ = try await listener.signals(matching: DBusMatchRule(member: "Ping"))
            }
        }
    }

    @Test func anInvalidRuleIsRejectedByTheBus() async throws {
        try await PrivateBus.with { bus in
            let listener = try await bus.connect()
            let error = await #expect(throws: DBusError.self) {
                _ = try await listener.signals(matching: DBusMatchRule(interface: "not an interface"))
            }
            #expect(error?.name.rawValue == "org.freedesktop.DBus.Error.MatchRuleInvalid")
            #expect(await listener.subscriptionCount == 0)
            await listener.close()
        }
    }
}
#endif
