#if os(Linux)
import Dispatch
import Foundation
import OTACore
import Synchronization

@testable import OTATransportBlueZ

#if canImport(Glibc)
import Glibc
#endif

/// A scripted `org.bluez` on a private bus: an adapter, a device with a GATT service and three
/// characteristics, served with the D-Bus layer the way bluetoothd publishes them.
///
/// - `DATA` (`…0002`): write-without-response, `AcquireWrite` (a `SOCK_SEQPACKET` socket pair
///   whose far end a thread reads, paused until ``startReading(delayMicroseconds:)`` when the
///   script says so).
/// - `CONTROL` (`…0003`): write + notify; a write with response is answered by the notification
///   `echo:<value>` when notifications are on.
/// - `STATUS` (`…0004`): read, answers `[0x01, 0x02, 0x03]`.
///
/// `Device1.Connect` sets `Connected` then `ServicesResolved`; ``disconnectDevice()`` sets
/// `Connected = false` and hangs up the socket, as a lost link does.
final class FakeBlueZ: Sendable {
    static let adapterPath: DBusObjectPath = "/org/bluez/hci0"
    static let address = "00:AA:01:01:00:01"
    static let devicePath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
    static let servicePath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01/service000a"
    static let serviceUUID = GATTUUID("6e400001-b5a3-f393-e0a9-e50e24dc0001")!
    static let data = CharacteristicID(
        service: serviceUUID, characteristic: GATTUUID("6e400002-b5a3-f393-e0a9-e50e24dc0001")!)
    static let control = CharacteristicID(
        service: serviceUUID, characteristic: GATTUUID("6e400003-b5a3-f393-e0a9-e50e24dc0001")!)
    static let status = CharacteristicID(
        service: serviceUUID, characteristic: GATTUUID("6e400004-b5a3-f393-e0a9-e50e24dc0001")!)
    static let dataPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01/service000a/char000b"
    static let controlPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01/service000a/char000d"
    static let statusPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01/service000a/char0010"

    /// How `AcquireWrite` behaves on `DATA`.
    enum AcquireWrite: Sendable {
        /// Hands out a socket.
        case socket
        /// Answers `org.bluez.Error.NotSupported`.
        case notSupported
        /// Not offered at all: no `WriteAcquired` property.
        case absent
    }

    /// Whether `CONTROL` has a Client Characteristic Configuration descriptor (`desc000f`) and how
    /// its `ReadValue` — a delivery receipt — is answered.
    enum ReceiptDescriptor: Sendable {
        /// No descriptor (the default, so that other tests see no receipts).
        case absent
        /// Answered at once.
        case answers
        /// Answered once ``FakeBlueZ/releaseReceipts()`` was called, as a device whose link has
        /// not carried the earlier writes yet.
        case heldUntilReleased
        /// Answered with an ATT error.
        case fails
    }

    /// What the fake publishes and how it answers.
    struct Script: Sendable {
        /// Adapters: name, address, powered.
        var adapters: [(name: String, address: String, powered: Bool)] = [("hci0", "00:AA:01:00:00:00", true)]
        /// Whether the device is known at start; otherwise it appears when discovery starts.
        var deviceKnown = true
        /// The ATT MTU, reported as `MTU` and by `AcquireWrite`.
        var mtu: UInt16 = 517
        /// Whether characteristics have an `MTU` property.
        var reportsMTU = true
        var acquireWrite: AcquireWrite = .socket
        /// Whether the socket reader waits for ``startReading(delayMicroseconds:)``.
        var readerStartsPaused = false
        /// After how many datagrams the socket reader stops again until the next
        /// ``startReading(delayMicroseconds:)``; `nil` never.
        var readerPausesAfter: Int?
        /// An error `Device1.Connect` answers with: name and message.
        var connectError: (String, String)?
        /// Whether the adapter offers `ConnectDevice` (bluetoothd -E).
        var offersConnectDevice = false
        /// The value of the device's Server Supported Features (0x2B3A, in a Generic Attribute
        /// service); `nil` publishes no such characteristic.
        var serverSupportedFeatures: [UInt8]?
        /// `CONTROL`'s CCC descriptor.
        var receiptDescriptor = ReceiptDescriptor.absent
    }

    /// One `WriteValue` call.
    struct Write: Sendable, Equatable {
        var path: DBusObjectPath
        var value: [UInt8]
        var type: String?
    }

    private struct State {
        var calls: [String] = []
        var writes: [Write] = []
        var datagrams: [[UInt8]] = []
        var discoveryFilter: [String: DBusValue]?
        var readDelay: UInt32 = 0
        var serverSocket: Int32 = -1
        var isDeviceExported = false
        var receiptsReleased = false
        /// `ReadValue` calls on the CCC descriptor, with the bytes read from the socket by then.
        var receiptReads: [Int] = []
    }

    let server: DBusConnection
    let script: Script
    private let state = Mutex(State())
    private let readerGate = DispatchSemaphore(value: 0)

    private init(server: DBusConnection, script: Script) {
        self.server = server
        self.script = script
    }

    /// Takes `org.bluez` on `bus` and publishes the scripted objects.
    static func start(on bus: PrivateBus, script: Script = Script()) async throws -> FakeBlueZ {
        let server = try await bus.connect()
        let fake = FakeBlueZ(server: server, script: script)
        try await server.requestName(BlueZ.serviceName)
        try await server.export(DBusObject(path: .root, isObjectManager: true))
        for adapter in script.adapters {
            try await fake.exportAdapter(name: adapter.name, address: adapter.address, powered: adapter.powered)
        }
        if script.deviceKnown { try await fake.exportDevice() }
        return fake
    }

    /// Starts a private bus and a fake on it, runs `body`, then stops both.
    @discardableResult
    static func with<Result>(
        _ script: Script = Script(),
        _ body: (PrivateBus, FakeBlueZ) async throws -> Result
    ) async throws -> Result {
        try await PrivateBus.with { bus in
            let fake = try await start(on: bus, script: script)
            do {
                let result = try await body(bus, fake)
                await fake.stop()
                return result
            } catch {
                await fake.stop()
                throw error
            }
        }
    }

    /// A connector for the fake's device on `bus`, with short timeouts.
    static func connector(
        on bus: PrivateBus,
        address: String = address,
        adapter: String? = nil,
        configure: (inout BlueZConnector.Configuration) -> Void = { _ in }
    ) -> BlueZConnector {
        var configuration = BlueZConnector.Configuration()
        configuration.discoveryTimeout = .seconds(2)
        configuration.servicesResolvedTimeout = .seconds(5)
        configuration.callTimeout = .seconds(5)
        configure(&configuration)
        return BlueZConnector(
            address: address, adapter: adapter, bus: .address(bus.address), configuration: configuration)
    }

    /// Releases the bus name and closes the connection.
    func stop() async {
        hangUpSocket()
        await server.close()
    }

    /// Shuts the far end of the `AcquireWrite` socket down; the reader then closes it.
    ///
    /// Under the lock, because the reader closes the descriptor under it too: a number closed and
    /// reused by another connection must never be shut down.
    private func hangUpSocket() {
        state.withLock { state in
            if state.serverSocket >= 0 { shutdown(state.serverSocket, Int32(SHUT_RDWR)) }
        }
        readerGate.signal()
    }

    // MARK: - What happened

    /// The methods called, as `Interface.Member` without the `org.bluez.` prefix, in order.
    var calls: [String] { state.withLock { $0.calls } }
    /// The `WriteValue` calls, in order.
    var writes: [Write] { state.withLock { $0.writes } }
    /// The datagrams read from the `AcquireWrite` socket, in order.
    var datagrams: [[UInt8]] { state.withLock { $0.datagrams } }
    /// The bytes read from the `AcquireWrite` socket.
    var socketBytes: Int { state.withLock { $0.datagrams.reduce(0) { $0 + $1.count } } }
    /// The `ReadValue` calls on `CONTROL`'s CCC descriptor: the bytes read from the socket when each came.
    var receiptReads: [Int] { state.withLock { $0.receiptReads } }
    /// Lets held receipts (``ReceiptDescriptor/heldUntilReleased``) be answered, now and from now on.
    func releaseReceipts() { state.withLock { $0.receiptsReleased = true } }
    /// The last `SetDiscoveryFilter` argument.
    var discoveryFilter: [String: DBusValue]? { state.withLock { $0.discoveryFilter } }

    /// Lets a paused socket reader go, reading one datagram every `delayMicroseconds`.
    func startReading(delayMicroseconds: UInt32 = 0) {
        state.withLock { $0.readDelay = delayMicroseconds }
        readerGate.signal()
    }

    /// Drops the link: `Connected = false`, and the `AcquireWrite` socket hangs up.
    func disconnectDevice() async throws {
        try await server.setProperties(
            ["Connected": .bool(false), "ServicesResolved": .bool(false)], of: BlueZ.Interface.device,
            at: Self.devicePath)
        hangUpSocket()
    }

    private func record(_ call: DBusMessage) {
        let interface = (call.interface ?? "").replacing("org.bluez.", with: "")
        state.withLock { $0.calls.append("\(interface).\(call.member ?? "")") }
    }

    private static func unknown(_ call: DBusMessage) -> DBusError {
        DBusError(name: .unknownMethod, message: "no method \(call.interface ?? "").\(call.member ?? "")")
    }

    // MARK: - Objects

    private func exportAdapter(name: String, address: String, powered: Bool) async throws {
        let path = DBusObjectPath.root.appending("org")!.appending("bluez")!.appending(name)!
        let properties: [String: DBusValue] = [
            "Address": .string(address), "Alias": .string("fake-\(name)"), "Powered": .bool(powered),
            "PowerState": .string(powered ? "on" : "off"), "Discovering": .bool(false),
        ]
        let script = script
        try await server.export(
            DBusObject(path: path, interfaces: [BlueZ.Interface.adapter: properties]) { [self] call in
                record(call)
                switch call.member {
                case "SetDiscoveryFilter":
                    let filter = try call.decode([String: DBusValue].self)
                    state.withLock { $0.discoveryFilter = filter }
                    return []
                case "StartDiscovery":
                    try await server.setProperties(["Discovering": .bool(true)], of: BlueZ.Interface.adapter, at: path)
                    if path == Self.adapterPath, !state.withLock({ $0.isDeviceExported }) { try await exportDevice() }
                    return []
                case "StopDiscovery":
                    try await server.setProperties(["Discovering": .bool(false)], of: BlueZ.Interface.adapter, at: path)
                    return []
                case "ConnectDevice" where script.offersConnectDevice:
                    let options = try call.decode([String: DBusValue].self)
                    guard options["Address"] == .string(Self.address), options["AddressType"] == .string("public")
                    else {
                        throw DBusError(name: "org.bluez.Error.Failed", message: "Connection refused")
                    }
                    if !state.withLock({ $0.isDeviceExported }) { try await exportDevice() }
                    try await server.setProperties(
                        ["Connected": .bool(true)], of: BlueZ.Interface.device, at: Self.devicePath)
                    return [.objectPath(Self.devicePath)]
                default:
                    throw Self.unknown(call)
                }
            })
    }

    /// The device's properties as advertised.
    static let deviceProperties: [String: DBusValue] = [
        "Address": .string(address), "AddressType": .string("public"), "Name": .string("ota-lamp"),
        "Alias": .string("ota-lamp"), "Adapter": .objectPath(adapterPath), "RSSI": .int16(-52),
        "UUIDs": .strings([serviceUUID.description]), "Connected": .bool(false), "ServicesResolved": .bool(false),
        "Paired": .bool(false),
        "ManufacturerData": .dictionary(
            key: .uint16, value: .variant,
            entries: [
                .init(key: .uint16(0x0059), value: .variant(.bytes([0x01, 0x02, 0x03])))
            ]),
    ]

    private func exportDevice() async throws {
        state.withLock { $0.isDeviceExported = true }
        let script = script
        try await server.export(
            DBusObject(path: Self.devicePath, interfaces: [BlueZ.Interface.device: Self.deviceProperties]) {
                [self] call in
                record(call)
                switch call.member {
                case "Connect":
                    if let (name, message) = script.connectError {
                        throw DBusError(name: DBusError.Name(rawValue: name), message: message)
                    }
                    try await server.setProperties(
                        ["Connected": .bool(true)], of: BlueZ.Interface.device, at: Self.devicePath)
                    try await server.setProperties(
                        ["ServicesResolved": .bool(true)], of: BlueZ.Interface.device, at: Self.devicePath)
                    return []
                case "Disconnect":
                    try await server.setProperties(
                        ["Connected": .bool(false), "ServicesResolved": .bool(false)], of: BlueZ.Interface.device,
                        at: Self.devicePath)
                    return []
                default:
                    throw Self.unknown(call)
                }
            })
        try await server.export(
            DBusObject(
                path: Self.servicePath,
                interfaces: [
                    BlueZ.Interface.gattService: [
                        "UUID": .string(Self.serviceUUID.description), "Device": .objectPath(Self.devicePath),
                        "Primary": .bool(true),
                    ]
                ]))
        try await exportCharacteristic(Self.dataPath, Self.data, flags: ["write-without-response"])
        try await exportCharacteristic(Self.controlPath, Self.control, flags: ["write", "notify"])
        try await exportCharacteristic(Self.statusPath, Self.status, flags: ["read"])
        if let features = script.serverSupportedFeatures { try await exportServerSupportedFeatures(features) }
        if script.receiptDescriptor != .absent { try await exportReceiptDescriptor() }
    }

    static let cccPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01/service000a/char000d/desc000f"

    /// `CONTROL`'s Client Characteristic Configuration descriptor, as BlueZ exports it.
    private func exportReceiptDescriptor() async throws {
        let properties: [String: DBusValue] = [
            "UUID": .string("00002902-0000-1000-8000-00805f9b34fb"), "Characteristic": .objectPath(Self.controlPath),
            "Value": .bytes([]),
        ]
        let behaviour = script.receiptDescriptor
        try await server.export(
            DBusObject(path: Self.cccPath, interfaces: [BlueZ.Interface.gattDescriptor: properties]) { [self] call in
                record(call)
                guard call.member == "ReadValue" else { throw Self.unknown(call) }
                state.withLock { $0.receiptReads.append($0.datagrams.reduce(0) { $0 + $1.count }) }
                switch behaviour {
                case .fails:
                    throw DBusError(name: "org.bluez.Error.NotPermitted", message: "Read not permitted")
                case .heldUntilReleased:
                    while !state.withLock({ $0.receiptsReleased }) { try await Task.sleep(for: .milliseconds(2)) }
                case .answers, .absent:
                    break
                }
                return [.bytes([0x01, 0x00])]
            })
    }

    static let gattServicePath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01/service0001"
    static let featuresPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01/service0001/char0002"

    /// The Generic Attribute service with Server Supported Features, as BlueZ exports it.
    private func exportServerSupportedFeatures(_ features: [UInt8]) async throws {
        try await server.export(
            DBusObject(
                path: Self.gattServicePath,
                interfaces: [
                    BlueZ.Interface.gattService: [
                        "UUID": .string("00001801-0000-1000-8000-00805f9b34fb"), "Device": .objectPath(Self.devicePath),
                        "Primary": .bool(true),
                    ]
                ]))
        let properties: [String: DBusValue] = [
            "UUID": .string("00002b3a-0000-1000-8000-00805f9b34fb"), "Service": .objectPath(Self.gattServicePath),
            "Flags": .strings(["read"]), "Value": .bytes([]), "Notifying": .bool(false),
        ]
        try await server.export(
            DBusObject(path: Self.featuresPath, interfaces: [BlueZ.Interface.gattCharacteristic: properties]) { [self] call in
                record(call)
                guard call.member == "ReadValue" else { throw Self.unknown(call) }
                return [.bytes(features)]
            })
    }

    private func exportCharacteristic(_ path: DBusObjectPath, _ id: CharacteristicID, flags: [String]) async throws {
        var properties: [String: DBusValue] = [
            "UUID": .string(id.characteristic.description), "Service": .objectPath(Self.servicePath),
            "Flags": .strings(flags), "Value": .bytes([]), "Notifying": .bool(false),
        ]
        if script.reportsMTU { properties["MTU"] = .uint16(script.mtu) }
        if flags.contains("write-without-response"), script.acquireWrite != .absent {
            properties["WriteAcquired"] = .bool(false)
        }
        let interface = BlueZ.Interface.gattCharacteristic
        try await server.export(
            DBusObject(path: path, interfaces: [interface: properties]) { [self] call in
                record(call)
                switch call.member {
                case "WriteValue":
                    let (value, options) = try call.decode([UInt8].self, [String: DBusValue].self)
                    state.withLock { $0.writes.append(Write(path: path, value: value, type: options["type"]?.string)) }
                    if path == Self.controlPath,
                        await server.properties(of: interface, at: path)?["Notifying"] == .bool(true)
                    {
                        try await server.setProperties(
                            ["Value": .bytes(Array("echo:".utf8) + value)], of: interface, at: path)
                    }
                    return []
                case "ReadValue":
                    return [.bytes([0x01, 0x02, 0x03])]
                case "StartNotify":
                    try await server.setProperties(["Notifying": .bool(true)], of: interface, at: path)
                    return []
                case "StopNotify":
                    try await server.setProperties(["Notifying": .bool(false)], of: interface, at: path)
                    return []
                case "AcquireWrite":
                    return try await acquireWrite(path)
                default:
                    throw Self.unknown(call)
                }
            })
    }

    private func acquireWrite(_ path: DBusObjectPath) async throws -> [DBusValue] {
        switch script.acquireWrite {
        case .notSupported, .absent:
            throw DBusError(name: "org.bluez.Error.NotSupported", message: "Operation is not supported")
        case .socket:
            break
        }
        guard let (serverEnd, clientEnd) = SocketCalls.seqpacketPair(nonBlocking: true) else {
            throw DBusError(name: "org.bluez.Error.Failed", message: "socketpair failed")
        }
        SocketCalls.setNonBlocking(serverEnd, false)
        state.withLock { $0.serverSocket = serverEnd }
        try await server.setProperties(["WriteAcquired": .bool(true)], of: BlueZ.Interface.gattCharacteristic, at: path)
        if !script.readerStartsPaused { readerGate.signal() }
        Thread.detachNewThread { [self] in readSocket(serverEnd) }
        return [.unixFD(DBusFileDescriptor(taking: clientEnd)), .uint16(script.mtu)]
    }

    /// Reads datagrams until the socket ends, like bluetoothd's `sock_read` (into a large buffer,
    /// so that an oversized datagram would show).
    private func readSocket(_ descriptor: Int32) {
        readerGate.wait()
        while let datagram = SocketCalls.readDatagram(descriptor, maximumLength: 4096) {
            let (delay, pause) = state.withLock { state in
                state.datagrams.append(datagram)
                return (state.readDelay, state.datagrams.count == script.readerPausesAfter)
            }
            if pause { readerGate.wait() }
            if delay > 0 { usleep(delay) }
        }
        state.withLock { state in
            if state.serverSocket == descriptor { state.serverSocket = -1 }
            SocketCalls.close(descriptor)
        }
    }
}
#endif
