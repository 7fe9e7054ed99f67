#if os(Linux)
import Synchronization
import Testing

@testable import OTATransportBlueZ

/// Objects exported by one connection and used from another, shaped like a BlueZ GATT application.
@Suite(.needsLibDBus) struct DBusExportTests {
    static let app: DBusObjectPath = "/com/example/app"
    static let service: DBusObjectPath = "/com/example/app/service0"
    static let characteristic: DBusObjectPath = "/com/example/app/service0/char0"
    static let serviceInterface = "org.bluez.GattService1"
    static let characteristicInterface = "org.bluez.GattCharacteristic1"

    static let serviceProperties: [String: DBusValue] = [
        "UUID": .string("0000fe59-0000-1000-8000-00805f9b34fb"), "Primary": .bool(true),
    ]
    static let characteristicProperties: [String: DBusValue] = [
        "UUID": .string("8ec90001-f315-4f60-9fb8-838830daea50"), "Service": .objectPath(service),
        "Flags": .strings(["write", "notify"]), "Value": .bytes([]),
    ]

    /// Exports the application, with a characteristic that records what is written to it.
    static func exportApplication(on server: DBusConnection, written: WriteRecorder? = nil) async throws {
        try await server.export(DBusObject(path: app, isObjectManager: true))
        try await server.export(DBusObject(path: service, interfaces: [serviceInterface: serviceProperties]))
        try await server.export(
            DBusObject(path: characteristic, interfaces: [characteristicInterface: characteristicProperties]) { call in
                switch (call.interface, call.member) {
                case (characteristicInterface, "WriteValue"):
                    let (value, _) = try call.decode([UInt8].self, [String: DBusValue].self)
                    written?.append(value)
                    return []
                case (characteristicInterface, "ReadValue"):
                    return [.bytes([1, 2, 3])]
                default:
                    throw DBusError(name: .unknownMethod, message: "no \(call.member ?? "")")
                }
            }
        )
    }

    @Test func answersPropertiesGetAndGetAll() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            try await Self.exportApplication(on: server)
            let properties = "org.freedesktop.DBus.Properties"

            let uuid = try await client.call(
                TestService.call(
                    "Get",
                    on: server,
                    path: Self.service,
                    interface: properties,
                    [.string(Self.serviceInterface), .string("UUID")]
                )
            ).decode(DBusValue.self)
            #expect(uuid == Self.serviceProperties["UUID"])

            let all = try await client.call(
                TestService.call(
                    "GetAll",
                    on: server,
                    path: Self.characteristic,
                    interface: properties,
                    [.string(Self.characteristicInterface)]
                )
            ).decode([String: DBusValue].self)
            #expect(all == Self.characteristicProperties)

            let unknownProperty = await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    TestService.call(
                        "Get",
                        on: server,
                        path: Self.service,
                        interface: properties,
                        [.string(Self.serviceInterface), .string("Nope")]
                    )
                )
            }
            #expect(unknownProperty?.name == .unknownProperty)
            let unknownInterface = await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    TestService.call("GetAll", on: server, path: Self.service, interface: properties, [.string("x.y")])
                )
            }
            #expect(unknownInterface?.name == .unknownInterface)
            let badArguments = await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    TestService.call("GetAll", on: server, path: Self.service, interface: properties, [.int32(1)])
                )
            }
            #expect(badArguments?.name == .invalidArgs)
            let readOnly = await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    TestService.call(
                        "Set",
                        on: server,
                        path: Self.service,
                        interface: properties,
                        [.string(Self.serviceInterface), .string("Primary"), .variant(.bool(false))]
                    )
                )
            }
            #expect(readOnly?.name == .propertyReadOnly)
            await client.close()
            await server.close()
        }
    }

    @Test func answersGetManagedObjectsForTheObjectsBelow() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            try await Self.exportApplication(on: server)
            try await server.export(DBusObject(path: "/com/example/elsewhere", interfaces: ["x.y": [:]]))
            let objects = try await client.call(
                TestService.call(
                    "GetManagedObjects",
                    on: server,
                    path: Self.app,
                    interface: "org.freedesktop.DBus.ObjectManager"
                )
            )
            .decode([DBusObjectPath: [String: [String: DBusValue]]].self)
            #expect(
                objects == [
                    Self.service: [Self.serviceInterface: Self.serviceProperties],
                    Self.characteristic: [Self.characteristicInterface: Self.characteristicProperties],
                ]
            )
            // Not an object manager:
            await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    TestService.call(
                        "GetManagedObjects",
                        on: server,
                        path: Self.service,
                        interface: "org.freedesktop.DBus.ObjectManager"
                    )
                )
            }
            await client.close()
            await server.close()
        }
    }

    @Test func methodCallsReachTheHandlerInOrder() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            let written = WriteRecorder()
            try await Self.exportApplication(on: server, written: written)
            let chunks = (0..<50).map { index in [UInt8](repeating: UInt8(index), count: 20) }
            for chunk in chunks {
                // Like a write without response: fire and forget, in order.
                var write = TestService.call(
                    "WriteValue",
                    on: server,
                    path: Self.characteristic,
                    interface: Self.characteristicInterface,
                    [.bytes(chunk), .variantDictionary(["type": .string("command")])]
                )
                write.noReplyExpected = true
                try await client.send(write)
            }
            let read = try await client.call(
                TestService.call(
                    "ReadValue",
                    on: server,
                    path: Self.characteristic,
                    interface: Self.characteristicInterface,
                    [.variantDictionary([:])]
                )
            )
            let value = try read.decode([UInt8].self)
            #expect(value == [1, 2, 3])
            #expect(written.values == chunks)
            await client.close()
            await server.close()
        }
    }

    @Test func setPropertiesEmitsPropertiesChanged() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            try await Self.exportApplication(on: server)
            let changes = try await client.signals(
                matching: DBusMatchRule(
                    sender: server.uniqueName,
                    path: Self.characteristic,
                    interface: "org.freedesktop.DBus.Properties",
                    member: "PropertiesChanged"
                )
            )
            try await server.setProperties(
                ["Value": .bytes([0x60, 0x01]), "Notifying": .bool(true)],
                of: Self.characteristicInterface,
                at: Self.characteristic
            )
            var iterator = changes.makeAsyncIterator()
            let signal = try #require(await iterator.next())
            let (interface, changed, invalidated) = try signal.decode(
                String.self,
                [String: DBusValue].self,
                [String].self
            )
            #expect(interface == Self.characteristicInterface)
            #expect(changed == ["Value": .bytes([0x60, 0x01]), "Notifying": .bool(true)])
            #expect(invalidated.isEmpty)
            #expect(
                await server.properties(of: Self.characteristicInterface, at: Self.characteristic)?["Value"]
                    == .bytes([0x60, 0x01])
            )

            await #expect(throws: DBusError.self) {
                try await server.setProperties(
                    ["Value": .bytes([])],
                    of: Self.characteristicInterface,
                    at: "/not/exported"
                )
            }
            await client.close()
            await server.close()
        }
    }

    @Test func anObjectManagerAnnouncesObjectsAddedAndRemoved() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            try await server.export(DBusObject(path: Self.app, isObjectManager: true))
            let announcements = try await client.signals(
                matching: DBusMatchRule(
                    sender: server.uniqueName,
                    interface: "org.freedesktop.DBus.ObjectManager"
                )
            )
            try await server.export(
                DBusObject(path: Self.service, interfaces: [Self.serviceInterface: Self.serviceProperties])
            )
            await server.unexport(Self.service)

            var iterator = announcements.makeAsyncIterator()
            let added = try #require(await iterator.next())
            #expect(added.member == "InterfacesAdded")
            #expect(added.path == Self.app)
            let (path, interfaces) = try added.decode(DBusObjectPath.self, [String: [String: DBusValue]].self)
            #expect(path == Self.service)
            #expect(interfaces == [Self.serviceInterface: Self.serviceProperties])
            let removed = try #require(await iterator.next())
            #expect(removed.member == "InterfacesRemoved")
            #expect(try removed.decode(DBusObjectPath.self, [String].self) == (Self.service, [Self.serviceInterface]))
            await client.close()
            await server.close()
        }
    }

    @Test func unexportingAndRexporting() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            try await server.export(TestService.object())
            await #expect(throws: DBusError.self) { try await server.export(TestService.object()) }
            await server.unexport(TestService.path)
            let gone = await #expect(throws: DBusError.self) {
                _ = try await client.call(TestService.call("Echo", on: server))
            }
            #expect(gone.map { [.unknownObject, .unknownMethod].contains($0.name) } == true)
            try await server.export(TestService.object())
            #expect(
                try await client.call(TestService.call("Echo", on: server, [.bool(true)])).arguments == [.bool(true)]
            )
            await client.close()
            await server.close()
        }
    }

    @Test func anInvalidReplyBecomesAnErrorReply() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            try await server.export(DBusObject(path: "/bad") { _ in [.string("nul\u{0}inside")] })
            let error = await #expect(throws: DBusError.self) {
                _ = try await client.call(
                    .methodCall(destination: server.uniqueName, path: "/bad", interface: nil, member: "Get")
                )
            }
            #expect(error?.name == .failed)
            #expect(error?.message.contains("invalid reply") == true)
            await client.close()
            await server.close()
        }
    }
}

/// The values written to a characteristic, in order.
final class WriteRecorder: Sendable {
    private let state = Mutex<[[UInt8]]>([])

    func append(_ value: [UInt8]) { state.withLock { $0.append(value) } }

    var values: [[UInt8]] { state.withLock { $0 } }
}
#endif
