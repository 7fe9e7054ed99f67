#if os(Linux)
import OTACore
import Testing

@testable import OTATransportBlueZ

/// Method calls between two connections on a private bus.
@Suite(.needsLibDBus) struct DBusConnectionTests {
    @Test func connectsAndGetsAUniqueName() async throws {
        try await PrivateBus.with { bus in
            try await DBusConnection.withConnection(to: .address(bus.address)) { connection in
                #expect(connection.uniqueName.hasPrefix(":"))
                #expect(connection.canPassFileDescriptors)
                #expect(await connection.isConnected)
                let id = try await connection.call(DBusConnection.busMethod("GetId", [])).decode(String.self)
                #expect(id.count == 32)
            }
        }
    }

    @Test func anUnreachableBusIsAnError() async {
        let error = await #expect(throws: DBusError.self) {
            _ = try await DBusConnection.connect(to: .address("unix:path=/nonexistent/ota-test-bus"))
        }
        #expect(error?.name.rawValue.hasPrefix("org.freedesktop.DBus.Error.") == true)
    }

    @Test(arguments: SampleValues.names)
    func valuesRoundTripThroughTheBus(name: String) async throws {
        let value = SampleValues.value(name)
        try await PrivateBus.withServerAndClient { bus, server, client in
            let reply = try await client.call(TestService.call("Echo", on: server, [value]))
            #expect(reply.arguments == [value])
            #expect(reply.signature == value.type.signature)
            #expect(reply.kind == .methodReturn)
            #expect(reply.sender == server.uniqueName)
        }
    }

    @Test func anErrorReplyKeepsItsNameAndMessage() async throws {
        try await PrivateBus.withServerAndClient { bus, server, client in
            let error = await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    TestService.call(
                        "Fail",
                        on: server,
                        [.string("org.bluez.Error.NotPermitted"), .string("Write not permitted")]
                    )
                )
            }
            #expect(error == DBusError(name: "org.bluez.Error.NotPermitted", message: "Write not permitted"))
            #expect(error?.transportError.kind == .notPermitted)

            let unknownMethod = await #expect(throws: DBusError.self) {
                _ = try await client.call(TestService.call("Nope", on: server))
            }
            #expect(unknownMethod?.name == .unknownMethod)

            let unknownObject = await #expect(throws: DBusError.self) {
                _ = try await client.call(TestService.call("Echo", on: server, path: "/nothing/here"))
            }
            #expect(unknownObject.map { [.unknownObject, .unknownMethod].contains($0.name) } == true)

            let noService = await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    .methodCall(destination: "org.bluez", path: "/", interface: nil, member: "Ping")
                )
            }
            #expect(noService?.name == .serviceUnknown)
        }
    }

    @Test func aCallTimesOut() async throws {
        try await PrivateBus.withServerAndClient(exporting: [TestService.slowPath]) { bus, server, client in
            let error = await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    TestService.call("Sleep", on: server, path: TestService.slowPath),
                    timeout: .milliseconds(200)
                )
            }
            #expect(error?.name == .noReply)
            #expect(await client.pendingCallCount == 0)
        }
    }

    @Test func manyConcurrentCallsComplete() async throws {
        try await PrivateBus.withServerAndClient { bus, server, client in
            let count = 300
            let results = try await withThrowingTaskGroup(of: (Int, Int32).self) { group in
                for index in 0..<count {
                    group.addTask {
                        let reply = try await client.call(
                            TestService.call(
                                "Echo",
                                on: server,
                                [.int32(Int32(index)), .bytes([UInt8](repeating: 1, count: 512))]
                            ),
                            // A hang guard: libdbus's 25 s default is too tight when the full
                            // parallel suite starves this process's threads (seen at load 18).
                            timeout: .seconds(120)
                        )
                        return (index, reply.arguments[0].int32 ?? -1)
                    }
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            #expect(results.count == count)
            #expect(results.allSatisfy { Int32($0.key) == $0.value })
            #expect(await client.pendingCallCount == 0)
        }
    }

    @Test func callsReuseTheWatchSources() async throws {
        try await PrivateBus.withServerAndClient { bus, server, client in
            let before = await (client.createdSourceCounts.watches, server.createdSourceCounts.watches)
            // A message larger than the socket's buffer, so that libdbus toggles each end's write
            // watch on and off around it (a small message is written at once and toggles nothing).
            let count = 4
            let payload = DBusValue.bytes([UInt8](repeating: 1, count: 1_000_000))
            for _ in 0..<count {
                let reply = try await client.call(TestService.call("Echo", on: server, [payload]), timeout: .seconds(120))
                #expect(reply.arguments == [payload])
            }
            #expect(await client.watchUpdateCount > 2 + count)
            // A toggle suspends or resumes the watch's sources instead of making new ones.
            let after = await (client.createdSourceCounts.watches, server.createdSourceCounts.watches)
            #expect(after.0 - before.0 <= 1)
            #expect(after.1 - before.1 <= 1)
        }
    }

    @Test func largeMessagesCrossTheBus() async throws {
        try await PrivateBus.withServerAndClient { bus, server, client in
            // Far more than a socket buffer, and than libdbus reads at once.
            let big = DBusValue.bytes((0..<300_000).map { UInt8(truncatingIfNeeded: $0) })
            let reply = try await client.call(TestService.call("Echo", on: server, [big]))
            #expect(reply.arguments == [big])
        }
    }

    @Test func closingFailsPendingCallsInsteadOfHanging() async throws {
        try await PrivateBus.withServerAndClient(exporting: [TestService.path, TestService.slowPath]) { bus, server, client in
            let pending = try await callThatWaits(client, on: server)
            await client.close()
            let error = await #expect(throws: DBusError.self) { _ = try await pending.value }
            #expect(error == .connectionClosed)
            #expect(
                error?.transportError.kind
                    == .disconnected(DisconnectReason(DBusError.connectionClosed.message, isLocal: true))
            )
            #expect(await !client.isConnected)

            let afterwards = await #expect(throws: DBusError.self) {
                _ = try await client.call(TestService.call("Echo", on: server))
            }
            #expect(afterwards == .connectionClosed)
            await #expect(throws: DBusError.connectionClosed) {
                try await client.send(.signal(path: "/a", interface: "a.b", member: "C"))
            }
        }
    }

    @Test func cancellingACallStopsWaiting() async throws {
        try await PrivateBus.withServerAndClient(exporting: [TestService.path, TestService.slowPath]) { bus, server, client in
            let pending = try await callThatWaits(client, on: server)
            pending.cancel()
            await #expect(throws: CancellationError.self) { _ = try await pending.value }
            #expect(await client.pendingCallCount == 0)
            // The connection still works.
            let reply = try await client.call(TestService.call("Echo", on: server, [.string("still here")]))
            #expect(reply.arguments == [.string("still here")])
        }
    }

    @Test func losingTheBusFailsCallsAndEndsStreams() async throws {
        try await PrivateBus.withServerAndClient(exporting: [TestService.slowPath]) { bus, server, client in
            let signals = try await client.signals(matching: DBusMatchRule(interface: TestService.interface))
            let pending = try await callThatWaits(client, on: server)
            bus.stop()
            let error = await #expect(throws: DBusError.self) { _ = try await pending.value }
            #expect(error == .connectionLost)
            for await _ in signals {}
            #expect(await !client.isConnected)
            #expect(await !server.isConnected)
        }
    }

    @Test func aWellKnownNameCanBeOwnedOnce() async throws {
        try await PrivateBus.withServerAndClient { bus, server, client in
            try await server.requestName("com.example.Updater")
            try await server.requestName("com.example.Updater")
            await #expect(throws: DBusError.self) { try await client.requestName("com.example.Updater") }
            let reply = try await client.call(
                .methodCall(
                    destination: "com.example.Updater",
                    path: TestService.path,
                    interface: TestService.interface,
                    member: "Echo",
                    arguments: [.uint16(7)]
                )
            )
            #expect(reply.arguments == [.uint16(7)])
            try await server.releaseName("com.example.Updater")
            try await client.requestName("com.example.Updater")
        }
    }

    @Test func onlyMethodCallsCanBeCalled() async throws {
        try await PrivateBus.with { bus in
            let client = try await bus.connect()
            let error = await #expect(throws: DBusError.self) {
                _ = try await client.call(.signal(path: "/a", interface: "a.b", member: "C"))
            }
            #expect(error?.name == .invalidArgs)
            await client.close()
        }
    }

    /// A call to the slow object that stays pending (60 s timeout), once the client counts it.
    private func callThatWaits(
        _ client: DBusConnection, on server: DBusConnection
    ) async throws -> Task<DBusMessage, any Error> {
        let pending = Task {
            try await client.call(
                TestService.call("Sleep", on: server, path: TestService.slowPath),
                timeout: .seconds(60)
            )
        }
        #expect(await eventually { await client.pendingCallCount == 1 })
        return pending
    }
}
#endif
