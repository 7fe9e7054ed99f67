#if os(Linux)
import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTATransportBlueZ

/// ``BlueZPeripheral`` against a fake `bluetoothd` on a private bus: what it registers, how the
/// model sees writes, reads, notifications and the link, and what it undoes when cancelled. The
/// real stack is exercised by Tests/RealStack/run-tests.sh.
@Suite(.needsLibDBus) struct BlueZPeripheralTests {
    static let service = GATTUUID("0000aa00-0000-1000-8000-00805f9b34fb")!
    static let data = CharacteristicID(service: service, characteristic: GATTUUID("0000aa01-0000-1000-8000-00805f9b34fb")!)
    static let control = CharacteristicID(service: service, characteristic: GATTUUID("0000aa02-0000-1000-8000-00805f9b34fb")!)
    static let status = CharacteristicID(service: service, characteristic: GATTUUID("0000aa03-0000-1000-8000-00805f9b34fb")!)
    static let root: DBusObjectPath = "/org/swiftbleota/peripheral"
    static let dataPath: DBusObjectPath = "/org/swiftbleota/peripheral/service0/char0"
    static let controlPath: DBusObjectPath = "/org/swiftbleota/peripheral/service0/char1"
    static let statusPath: DBusObjectPath = "/org/swiftbleota/peripheral/service0/char2"
    static let characteristicInterface = "org.bluez.GattCharacteristic1"

    // MARK: - Registration

    @Test func registersTheApplicationAndTheAdvertisement() async throws {
        try await withPeripheral { fake, peripheral, _ in
            #expect(peripheral.address == PeripheralFakeBlueZ.address)
            let objects = try #require(fake.applicationObjects)
            #expect(
                objects[Self.root.appending("service0")!] == [
                    "org.bluez.GattService1": ["UUID": .string(Self.service.description), "Primary": .bool(true)]
                ])
            #expect(
                objects[Self.dataPath]?[Self.characteristicInterface] == [
                    "UUID": .string(Self.data.characteristic.description),
                    "Service": .objectPath(Self.root.appending("service0")!),
                    "Flags": .strings(["write-without-response"]),
                ])
            #expect(objects[Self.controlPath]?[Self.characteristicInterface]?["Flags"] == .strings(["write", "notify"]))
            #expect(objects[Self.statusPath]?[Self.characteristicInterface]?["Flags"] == .strings(["read"]))
            let advertisement = try #require(fake.advertisement)
            #expect(advertisement["Type"] == .string("peripheral"))
            #expect(advertisement["ServiceUUIDs"] == .strings([Self.service.description]))
            #expect(advertisement["LocalName"] == .string("Unit-Test"))
        }
    }

    @Test func unregistersEverythingWhenCancelled() async throws {
        try await PrivateBus.with { bus in
            let fake = try await PeripheralFakeBlueZ.start(on: bus)
            let ready = AsyncStream.makeStream(of: Void.self)
            let serving = Task {
                try await BlueZPeripheral.serve(model: PeripheralTestModel(), configuration: Self.configuration(bus)) { _ in
                    ready.continuation.yield()
                }
            }
            for await _ in ready.stream { break }
            serving.cancel()
            try await serving.value
            #expect(fake.calls.contains("UnregisterAdvertisement \(Self.root.appending("advertisement0")!)"))
            #expect(fake.calls.contains("UnregisterApplication \(Self.root)"))
            await fake.connection.close()
        }
    }

    @Test func advertisesAgainWhileNoCentralIsConnected() async throws {
        let clock = TestClock()
        try await withPeripheral(readvertise: .seconds(20), clock: clock) { fake, _, model in
            func registrations() -> Int { fake.calls.filter { $0.hasPrefix("RegisterAdvertisement") }.count }
            /// Lets one readvertising interval pass on the peripheral's clock.
            func oneInterval() async {
                #expect(await eventually { clock.sleeperCount == 1 })
                clock.advance(by: .seconds(20))
            }
            #expect(registrations() == 1)
            await oneInterval()
            #expect(await eventually { registrations() == 2 })
            await oneInterval()
            #expect(await eventually { registrations() == 3 })
            #expect(fake.calls.filter { $0.hasPrefix("UnregisterAdvertisement") }.count == 2)
            try await fake.setConnected(true)
            #expect(await eventually { model.events == ["connected"] })
            // Connected: intervals pass without advertising again.
            for _ in 0..<3 { await oneInterval() }
            #expect(await eventually { clock.sleeperCount == 1 })
            #expect(registrations() == 3)
        }
    }

    @Test func failsClearlyWithoutTheAdapter() async throws {
        try await PrivateBus.with { bus in
            let fake = try await PeripheralFakeBlueZ.start(on: bus)
            var configuration = Self.configuration(bus)
            configuration.adapter = "hci7"
            let error = await #expect(throws: BlueZPeripheralError.self) {
                try await BlueZPeripheral.serve(model: PeripheralTestModel(), configuration: configuration)
            }
            #expect(error?.description.contains("/org/bluez/hci7") == true)
            await fake.connection.close()
        }
    }

    // MARK: - GATT

    @Test func writeCommandsReachTheModelBeforeALaterWriteRequest() async throws {
        try await withPeripheral { fake, _, model in
            let notifications = try await fake.notifications(at: Self.controlPath)
            try await fake.call(Self.controlPath, "StartNotify")
            // bluetoothd sends write commands without waiting for replies, then a request on
            // another characteristic: the model must see every command first.
            for index in 0..<200 {
                try await fake.send(Self.dataPath, "WriteValue", [.bytes([UInt8(truncatingIfNeeded: index)]), PeripheralFakeBlueZ.options])
            }
            try await fake.call(Self.controlPath, "WriteValue", [.bytes(Array("count".utf8)), PeripheralFakeBlueZ.options])
            var iterator = notifications.makeAsyncIterator()
            let value = await iterator.next()
            #expect(value.map { String(decoding: $0, as: UTF8.self) } == "count:200")
            #expect(model.dataWrites == (0..<200).map { UInt8(truncatingIfNeeded: $0) })
            #expect(model.kinds == [.withoutResponse, .withResponse])
        }
    }

    @Test func statusesBecomeTheErrorsBlueZTurnsIntoATTErrors() async throws {
        try await withPeripheral { fake, _, _ in
            func writeError(_ text: String) async -> DBusError? {
                await #expect(throws: DBusError.self) {
                    try await fake.call(Self.controlPath, "WriteValue", [.bytes(Array(text.utf8)), PeripheralFakeBlueZ.options])
                }
            }
            let invalid = await writeError("bogus")
            #expect(invalid?.name.rawValue == "org.bluez.Error.Failed")
            #expect(invalid?.message.hasPrefix("0x") == false)  // BlueZ sends 0x80 for a message that is not a code
            let application = await writeError("app-error")
            #expect(application == DBusError(name: "org.bluez.Error.Failed", message: "0x85"))
            let length = await writeError("too-long")
            #expect(length?.name.rawValue == "org.bluez.Error.InvalidValueLength")
            let permitted = await writeError("forbidden")
            #expect(permitted?.name.rawValue == "org.bluez.Error.NotPermitted")
        }
    }

    @Test func readsHonourTheOffset() async throws {
        try await withPeripheral { fake, _, _ in
            let whole = try await fake.callReturning(Self.statusPath, "ReadValue", [.variantDictionary([:])]).decode([UInt8].self)
            #expect(whole == Array("status-value".utf8))
            let tail = try await fake.callReturning(Self.statusPath, "ReadValue", [.variantDictionary(["offset": .uint16(7)])])
                .decode([UInt8].self)
            #expect(tail == Array("value".utf8))
        }
    }

    @Test func subscriptionsFollowStartAndStopNotify() async throws {
        try await withPeripheral { fake, peripheral, _ in
            #expect(!peripheral.isSubscribed(to: Self.control))
            try await fake.call(Self.controlPath, "StartNotify")
            #expect(peripheral.isSubscribed(to: Self.control))
            try await fake.call(Self.controlPath, "StopNotify")
            #expect(!peripheral.isSubscribed(to: Self.control))
        }
    }

    // MARK: - The link

    @Test func connectionsAndRebootsReachTheModelInOrder() async throws {
        let clock = TestClock()
        try await withPeripheral(clock: clock) { fake, peripheral, model in
            try await fake.setConnected(true)
            #expect(await eventually { model.events == ["connected"] })
            try await fake.call(Self.controlPath, "StartNotify")
            try await fake.call(Self.controlPath, "WriteValue", [.bytes(Array("reboot".utf8)), PeripheralFakeBlueZ.options])
            // After the model's reboot delay, on the peripheral's clock, the reboot disconnects the
            // central through Device1.Disconnect, then restarts the model.
            #expect(await eventually { clock.sleeperCount == 1 })
            #expect(model.events == ["connected"])
            clock.advance(by: .milliseconds(10))
            #expect(await eventually { model.events == ["connected", "disconnected", "rebooted"] })
            #expect(fake.calls.contains("Disconnect \(PeripheralFakeBlueZ.devicePath)"))
            #expect(!peripheral.isSubscribed(to: Self.control))
            #expect(peripheral.statistics.reboots == 1)
            // The central comes back.
            try await fake.setConnected(true)
            #expect(await eventually { model.events.last == "connected" })
            try await fake.setConnected(false)
            #expect(await eventually { model.events.last == "disconnected" })
            #expect(peripheral.statistics.connections == 2)
        }
    }

    @Test func dropsTheLinkOnceAfterTheConfiguredDataBytes() async throws {
        try await withPeripheral(dropLinkAfter: 1000) { fake, peripheral, model in
            try await fake.setConnected(true)
            // As bluetoothd, the fake sends what arrived before the link went down first.
            fake.holdDisconnects = true
            for index in 0..<20 {
                try await fake.send(Self.dataPath, "WriteValue", [.bytes([UInt8](repeating: UInt8(index), count: 100)), PeripheralFakeBlueZ.options])
            }
            #expect(await eventually { fake.calls.contains("Disconnect \(PeripheralFakeBlueZ.devicePath)") })
            fake.holdDisconnects = false
            #expect(await eventually { model.events == ["connected", "disconnected"] })
            // The tenth write reached 1000 bytes; what came after it never reached the device.
            #expect(model.dataWrites.count == 1000)
            #expect(await eventually { peripheral.statistics.discardedWrites == 10 })
            // Only once: after a reconnection everything arrives.
            try await fake.setConnected(true)
            for _ in 0..<20 {
                try await fake.send(Self.dataPath, "WriteValue", [.bytes([UInt8](repeating: 0, count: 100)), PeripheralFakeBlueZ.options])
            }
            try await fake.call(Self.controlPath, "WriteValue", [.bytes(Array("count".utf8)), PeripheralFakeBlueZ.options])
            #expect(model.dataWrites.count == 3000)
        }
    }

    @Test func aDyingLinkLosesDataButAnswersRequestsUntilItDrops() async throws {
        let clock = TestClock()
        try await withPeripheral(dyingLinkAfter: 1000, clock: clock) { fake, peripheral, model in
            try await fake.setConnected(true)
            for index in 0..<20 {
                try await fake.send(Self.dataPath, "WriteValue", [.bytes([UInt8](repeating: UInt8(index), count: 100)), PeripheralFakeBlueZ.options])
            }
            // The data path died at 1000 bytes; a request still reaches the model and is answered.
            try await fake.call(Self.controlPath, "WriteValue", [.bytes(Array("count".utf8)), PeripheralFakeBlueZ.options])
            #expect(model.dataWrites.count == 1000)
            #expect(peripheral.statistics.discardedWrites == 10)
            #expect(!fake.calls.contains("Disconnect \(PeripheralFakeBlueZ.devicePath)"))
            // bluetoothd's timer: the link drops once the configured time has passed on the clock.
            #expect(await eventually { clock.sleeperCount > 0 })
            clock.advance(by: .seconds(2))
            #expect(await eventually { fake.calls.contains("Disconnect \(PeripheralFakeBlueZ.devicePath)") })
            #expect(await eventually { model.events == ["connected", "disconnected"] })
            // Only once: after a reconnection everything arrives.
            try await fake.setConnected(true)
            for _ in 0..<20 {
                try await fake.send(Self.dataPath, "WriteValue", [.bytes([UInt8](repeating: 0, count: 100)), PeripheralFakeBlueZ.options])
            }
            try await fake.call(Self.controlPath, "WriteValue", [.bytes(Array("count".utf8)), PeripheralFakeBlueZ.options])
            #expect(model.dataWrites.count == 3000)
        }
    }

    // MARK: - Helpers

    static func configuration(
        _ bus: PrivateBus, dropLinkAfter: Int? = nil, dyingLinkAfter: Int? = nil, readvertise: Duration? = nil,
        clock: any Clock<Duration> = TestClock()
    ) -> BlueZPeripheral.Configuration {
        var configuration = BlueZPeripheral.Configuration(
            adapter: "hci1", localName: "Unit-Test", flash: NORFlash(capacity: 65536), dropLinkAfterDataBytes: dropLinkAfter,
            readvertiseInterval: readvertise, clock: clock, bus: .address(bus.address))
        configuration.dyingLinkAfterDataBytes = dyingLinkAfter
        return configuration
    }

    /// Serves a ``PeripheralTestModel`` against a fake bluetoothd, runs `body` once it is ready, then stops.
    func withPeripheral(
        dropLinkAfter: Int? = nil,
        dyingLinkAfter: Int? = nil,
        readvertise: Duration? = nil,
        clock: any Clock<Duration> = TestClock(),
        _ body: (PeripheralFakeBlueZ, BlueZPeripheral, PeripheralTestModel) async throws -> Void
    ) async throws {
        try await PrivateBus.with { bus in
            let fake = try await PeripheralFakeBlueZ.start(on: bus)
            let model = PeripheralTestModel()
            let ready = AsyncStream.makeStream(of: BlueZPeripheral.self)
            let serving = Task {
                try await BlueZPeripheral.serve(
                    model: model,
                    configuration: Self.configuration(bus, dropLinkAfter: dropLinkAfter, dyingLinkAfter: dyingLinkAfter, readvertise: readvertise, clock: clock)
                ) {
                    ready.continuation.yield($0)
                    ready.continuation.finish()
                }
            }
            var readiness = ready.stream.makeAsyncIterator()
            guard let peripheral = await readiness.next() else {
                try await serving.value
                Issue.record("the peripheral never became ready")
                return
            }
            do {
                try await body(fake, peripheral, model)
            } catch {
                serving.cancel()
                _ = await serving.result
                throw error
            }
            serving.cancel()
            try await serving.value
            await fake.connection.close()
        }
    }
}

/// A device model for the tests: Data (write without response) records bytes; Control (write,
/// notify) answers commands by notification; Status (read) returns a fixed value.
final class PeripheralTestModel: DeviceModel {
    private struct State {
        var dataWrites: [UInt8] = []
        var kinds: [WriteKind] = []
        var events: [String] = []
    }
    private let state = Mutex(State())

    var dataWrites: [UInt8] { state.withLock { $0.dataWrites } }
    /// The kinds of writes seen, without repeats in a row.
    var kinds: [WriteKind] { state.withLock { $0.kinds } }
    var events: [String] { state.withLock { $0.events } }

    var services: [GATTServiceDefinition] {
        [
            GATTServiceDefinition(
                uuid: BlueZPeripheralTests.service,
                characteristics: [
                    .init(uuid: BlueZPeripheralTests.data.characteristic, properties: .writeWithoutResponse),
                    .init(uuid: BlueZPeripheralTests.control.characteristic, properties: [.write, .notify]),
                    .init(uuid: BlueZPeripheralTests.status.characteristic, properties: .read),
                ])
        ]
    }

    func connected(_ peripheral: any PeripheralContext) { state.withLock { $0.events.append("connected") } }
    func disconnected() { state.withLock { $0.events.append("disconnected") } }
    func rebooted() { state.withLock { $0.events.append("rebooted") } }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        state.withLock { if $0.kinds.last != kind { $0.kinds.append(kind) } }
        switch characteristic {
        case BlueZPeripheralTests.data:
            // Slow flash: write commands pile up in the characteristic's queue.
            Thread.sleep(forTimeInterval: 0.0005)
            state.withLock { $0.dataWrites.append(contentsOf: value) }
            return .success
        case BlueZPeripheralTests.control:
            switch String(decoding: value, as: UTF8.self) {
            case "count":
                peripheral.notify(Data("count:\(dataWrites.count)".utf8), on: characteristic)
            case "reboot":
                peripheral.reboot(after: .milliseconds(10))
            case "app-error":
                return ATTStatus(rawValue: 0x85)
            case "too-long":
                return .invalidAttributeValueLength
            case "forbidden":
                return .writeNotPermitted
            default:
                return .invalidPDU
            }
            return .success
        default:
            return .writeNotPermitted
        }
    }

    func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        characteristic == BlueZPeripheralTests.status ? .success(Data("status-value".utf8)) : .failure(.readNotPermitted)
    }
}

/// Just enough of bluetoothd: `org.bluez` with adapter hci1 (GattManager1, LEAdvertisingManager1),
/// one central's device object below it, and calls into the registered application.
final class PeripheralFakeBlueZ: Sendable {
    static let address = "00:AA:01:01:00:01"
    static let adapterPath: DBusObjectPath = "/org/bluez/hci1"
    static let devicePath: DBusObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
    /// WriteValue's options as bluetoothd 5.66 sends them to a server application.
    static let options: DBusValue = .variantDictionary([
        "device": .objectPath(devicePath), "link": .string("LE"), "mtu": .uint16(517),
    ])

    private struct State {
        var application: String?
        var applicationObjects: [DBusObjectPath: [String: [String: DBusValue]]]?
        var advertisement: [String: DBusValue]?
        var calls: [String] = []
        var holdDisconnects = false
        /// Disconnect calls waiting for `holdDisconnects` to be cleared.
        var heldDisconnects: [CheckedContinuation<Void, Never>] = []
    }

    let connection: DBusConnection
    private let state = Mutex(State())

    private init(connection: DBusConnection) {
        self.connection = connection
    }

    /// The objects the application's object manager listed at registration.
    var applicationObjects: [DBusObjectPath: [String: [String: DBusValue]]]? { state.withLock { $0.applicationObjects } }
    /// The advertisement's properties at registration.
    var advertisement: [String: DBusValue]? { state.withLock { $0.advertisement } }
    /// While set, Device1.Disconnect does not complete.
    var holdDisconnects: Bool {
        get { state.withLock { $0.holdDisconnects } }
        set {
            let released = state.withLock { state in
                state.holdDisconnects = newValue
                guard !newValue else { return [CheckedContinuation<Void, Never>]() }
                defer { state.heldDisconnects = [] }
                return state.heldDisconnects
            }
            for disconnect in released { disconnect.resume() }
        }
    }

    /// Returns once `holdDisconnects` is clear, without polling.
    private func waitWhileDisconnectsAreHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let held = state.withLock { state in
                if state.holdDisconnects { state.heldDisconnects.append(continuation) }
                return state.holdDisconnects
            }
            if !held { continuation.resume() }
        }
    }

    /// "Member path" of every call to the adapter or the device.
    var calls: [String] { state.withLock { $0.calls } }

    static func start(on bus: PrivateBus) async throws -> PeripheralFakeBlueZ {
        let connection = try await bus.connect()
        try await connection.requestName("org.bluez")
        let fake = PeripheralFakeBlueZ(connection: connection)
        try await connection.export(DBusObject(path: "/", isObjectManager: true))
        try await connection.export(
            DBusObject(
                path: adapterPath,
                interfaces: [
                    "org.bluez.Adapter1": ["Address": .string(address), "Powered": .bool(true)],
                    "org.bluez.GattManager1": [:], "org.bluez.LEAdvertisingManager1": [:],
                ]
            ) { call in try await fake.adapterCall(call) })
        try await connection.export(
            DBusObject(
                path: devicePath,
                interfaces: ["org.bluez.Device1": ["Address": .string("00:AA:01:00:00:00"), "Connected": .bool(false)]]
            ) { call in
                fake.state.withLock { $0.calls.append("\(call.member ?? "") \(devicePath)") }
                if call.member == "Disconnect" {
                    await fake.waitWhileDisconnectsAreHeld()
                    try await fake.setConnected(false)
                }
                return []
            })
        return fake
    }

    private func adapterCall(_ call: DBusMessage) async throws -> [DBusValue] {
        let path = call.arguments.first?.objectPath
        state.withLock { $0.calls.append("\(call.member ?? "") \(path?.rawValue ?? "")") }
        switch call.member {
        case "RegisterApplication":
            state.withLock { $0.application = call.sender }
            let objects = try await connection.call(
                .methodCall(
                    destination: call.sender, path: path!, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
            ).decode([DBusObjectPath: [String: [String: DBusValue]]].self)
            state.withLock { $0.applicationObjects = objects }
        case "RegisterAdvertisement":
            let properties = try await connection.call(
                .methodCall(
                    destination: call.sender, path: path!, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                    arguments: [.string("org.bluez.LEAdvertisement1")])
            ).decode([String: DBusValue].self)
            state.withLock { $0.advertisement = properties }
        default:
            break
        }
        return []
    }

    private var application: String { state.withLock { $0.application ?? "" } }

    /// Changes the device's Connected property, with PropertiesChanged.
    func setConnected(_ connected: Bool) async throws {
        try await connection.setProperties(["Connected": .bool(connected)], of: "org.bluez.Device1", at: Self.devicePath)
    }

    /// Calls a characteristic method of the application and waits for the reply.
    func call(_ path: DBusObjectPath, _ member: String, _ arguments: [DBusValue] = []) async throws {
        _ = try await callReturning(path, member, arguments)
    }

    func callReturning(_ path: DBusObjectPath, _ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
        try await connection.call(
            .methodCall(
                destination: application, path: path, interface: BlueZPeripheralTests.characteristicInterface, member: member,
                arguments: arguments))
    }

    /// Sends a characteristic method call without waiting, as bluetoothd sends write commands.
    func send(_ path: DBusObjectPath, _ member: String, _ arguments: [DBusValue]) async throws {
        var message = DBusMessage.methodCall(
            destination: application, path: path, interface: BlueZPeripheralTests.characteristicInterface, member: member,
            arguments: arguments)
        message.noReplyExpected = true
        try await connection.send(message)
    }

    /// The values the application sets on a characteristic (its notifications).
    func notifications(at path: DBusObjectPath) async throws -> AsyncStream<Data> {
        let signals = try await connection.signals(
            matching: DBusMatchRule(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"))
        return AsyncStream { continuation in
            let task = Task {
                for await signal in signals {
                    if signal.arguments.count >= 2, let value = signal.arguments[1].variantDictionary?["Value"]?.bytes {
                        continuation.yield(Data(value))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
#endif
