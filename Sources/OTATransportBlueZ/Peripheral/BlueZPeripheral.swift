#if os(Linux)
import Foundation
import OTACore
import Synchronization

/// Serves a protocol's ``DeviceModel`` as a real GATT peripheral through BlueZ: the device side
/// of an update, on a real Bluetooth stack, for real-stack tests and demos.
///
/// ```swift
/// let model = try ToolEnvironment.standard.registry.descriptor(named: "framed").makeDeviceModel([:])
/// try await BlueZPeripheral.serve(model: model, adapter: "hci1", name: "OTA-Test") { peripheral in
///     print("ready \(peripheral.address)")
/// }   // runs until the task is cancelled
/// ```
///
/// ``serve(model:configuration:onReady:)`` connects to the bus (the system bus unless
/// ``Configuration/bus`` says otherwise), exports the model's
/// services as a GATT application (see below), registers it with the adapter's
/// `GattManager1.RegisterApplication`, registers a connectable advertisement (the model's service
/// UUIDs and the local name) with `LEAdvertisingManager1.RegisterAdvertisement`, calls `onReady`,
/// and serves until the calling task is cancelled. Then it unregisters both and closes its
/// connection, and returns normally; it throws only when it cannot serve.
///
/// What the model sees, as ``PeripheralContext``:
/// - Writes: `WriteValue` becomes ``DeviceModel/write(_:to:kind:peripheral:)``. BlueZ 5.66 does not
///   say whether the central used a write command or a write request, so the kind comes from the
///   `type` option when BlueZ sends one (`command` is without response), else from the
///   characteristic's properties (a characteristic with only one write property), else from
///   whether `bluetoothd` expects a reply. A status other than success becomes the D-Bus error
///   that makes BlueZ send it as the ATT error (see `ATTStatus.bluezError(onRead:)`).
///   `AcquireWrite` is not offered, so BlueZ delivers every write through `WriteValue`.
/// - Order: BlueZ sends everything in the order it arrived over the air, but each characteristic
///   object is its own D-Bus object with its own queue of calls. So that a write request or a read
///   is not handled before write commands that arrived earlier on another characteristic (the
///   data before a COMMIT), it first waits until every other characteristic that takes write
///   commands has handled what it had queued (a round trip of a call to itself through the bus).
///   The same happens before a disconnect is reported to the model. On the system bus this
///   needs root, as BlueZ's own bus policy grants root alone such calls.
/// - ``notify(_:on:)`` sets the characteristic's `Value` (`PropertiesChanged`), which BlueZ
///   notifies or indicates to every central that enabled the CCCD: BlueZ keeps the subscription
///   state that counts, and a notification to a central that did not subscribe goes nowhere.
///   ``isSubscribed(to:)`` follows `StartNotify` and `StopNotify`.
/// - ``flash``: the configured ``FlashStorage`` (a ``NORFlash`` by default).
/// - ``reboot(after:)``: after the delay, disconnects the central (`Device1.Disconnect`), reports
///   the disconnect, then calls ``DeviceModel/rebooted()``.
/// - Connections: `Device1.Connected` of devices below the adapter's object (and the `device`
///   option of the first write, whichever comes first) calls ``DeviceModel/connected(_:)``;
///   the link going down calls ``DeviceModel/disconnected()``. One central at a time.
///
/// Calls into the model are made one at a time.
public final class BlueZPeripheral: PeripheralContext, Sendable {
    static let adapterInterface = "org.bluez.Adapter1"
    static let deviceInterface = "org.bluez.Device1"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    /// The member of the order barrier, called on our own characteristic objects. It uses the
    /// characteristic interface because the system bus lets root send method calls of that
    /// interface to anyone (bluetooth.conf), and nothing else; run as another user, the barrier
    /// is refused and a write request may overtake earlier write commands.
    static let barrierMember = "OTAPeripheralBarrier"

    /// The model served.
    public let model: any DeviceModel
    /// How it is served.
    public let configuration: Configuration
    /// The adapter's object, such as `/org/bluez/hci1`.
    public let adapterPath: DBusObjectPath
    /// The adapter's Bluetooth address, which centrals connect to, such as `00:AA:01:01:00:01`.
    public let address: String

    let bus: DBusConnection
    let application: GATTApplication
    let advertisementPath: DBusObjectPath
    /// Serializes calls into the model (``DeviceModel`` expects one at a time).
    let modelLock = Mutex(())
    let state = Mutex(LinkState())
    let outgoing: AsyncStream<OutgoingNotification>.Continuation
    let outgoingStream: AsyncStream<OutgoingNotification>

    /// What changes while serving.
    struct LinkState {
        /// The connected central's device object below the adapter.
        var central: DBusObjectPath?
        var subscriptions: Set<CharacteristicID> = []
        /// An injected link drop was started and the link is not down yet.
        var dropping = false
        /// The injected link drop happened (it happens once).
        var dropped = false
        /// The injected dying link started: writes without response are discarded until the link
        /// is down.
        var dying = false
        /// The injected dying link happened (it happens once).
        var died = false
        /// An order barrier failed (and was reported).
        var barrierFailed = false
        var statistics = Statistics()
    }

    /// A notification on its way to BlueZ.
    struct OutgoingNotification: Sendable {
        var path: DBusObjectPath
        var value: Data
    }

    private init(model: any DeviceModel, configuration: Configuration, bus: DBusConnection, adapterPath: DBusObjectPath, address: String) {
        self.model = model
        self.configuration = configuration
        self.bus = bus
        self.adapterPath = adapterPath
        self.address = address
        application = GATTApplication(root: configuration.objectRoot, definitions: model.services, security: configuration.security)
        advertisementPath = configuration.objectRoot.appending("advertisement0")!
        (outgoingStream, outgoing) = AsyncStream.makeStream(of: OutgoingNotification.self, bufferingPolicy: .unbounded)
    }

    // MARK: - Serving

    /// Serves `model` on `adapter` until the calling task is cancelled, with the other settings
    /// at their defaults (see ``Configuration``).
    ///
    /// - Parameters:
    ///   - adapter: the adapter that plays the peripheral, such as `hci1`.
    ///   - name: the local name to advertise.
    ///   - flashSize: bytes of ``NORFlash`` (4 KiB sectors) the model gets.
    ///   - onReady: called once the application and the advertisement are registered.
    public static func serve(
        model: any DeviceModel,
        adapter: String = "hci1",
        name: String = "OTA-Test",
        flashSize: Int = 1 << 20,
        onReady: @escaping @Sendable (BlueZPeripheral) async throws -> Void = { _ in }
    ) async throws {
        try await serve(
            model: model,
            configuration: Configuration(adapter: adapter, localName: name, flash: NORFlash(capacity: flashSize)),
            onReady: onReady)
    }

    /// Serves `model` as `configuration` says until the calling task is cancelled.
    ///
    /// Returns normally once cancelled, after unregistering the advertisement and the application
    /// and closing its bus connection.
    ///
    /// - Parameter onReady: called once the application and the advertisement are registered, with
    ///   the peripheral (its ``address``, ``flash``, ``statistics``). What it throws stops serving
    ///   and is rethrown.
    /// - Throws: ``BlueZPeripheralError`` when the bus, the adapter or BlueZ cannot be reached, a
    ///   registration is refused, or the bus connection is lost while serving.
    public static func serve(
        model: any DeviceModel,
        configuration: Configuration,
        onReady: @escaping @Sendable (BlueZPeripheral) async throws -> Void = { _ in }
    ) async throws {
        let bus = try await BlueZPeripheralError.step("cannot connect to the D-Bus bus") {
            try await DBusConnection.connect(to: configuration.bus)
        }
        let peripheral: BlueZPeripheral
        do {
            guard !configuration.adapter.contains("/"), let adapterPath = DBusObjectPath("/org/bluez/" + configuration.adapter) else {
                throw BlueZPeripheralError("'\(configuration.adapter)' is not an adapter name such as hci1")
            }
            let address = try await Self.prepareAdapter(adapterPath, on: bus, log: configuration.log)
            peripheral = BlueZPeripheral(model: model, configuration: configuration, bus: bus, adapterPath: adapterPath, address: address)
        } catch {
            await bus.close()
            if error is CancellationError { return }
            throw error
        }
        try await peripheral.run(onReady: onReady)
    }

    /// Checks that the adapter exists, powers it on, and returns its address.
    private static func prepareAdapter(_ adapterPath: DBusObjectPath, on bus: DBusConnection, log: @Sendable (String) -> Void) async throws -> String {
        func property(_ name: String) async throws -> DBusValue {
            try await bus.call(
                .methodCall(
                    destination: "org.bluez", path: adapterPath, interface: propertiesInterface, member: "Get",
                    arguments: [.string(adapterInterface), .string(name)])
            ).decode(DBusValue.self)
        }
        let address: String
        do {
            guard let text = try await property("Address").string else {
                throw BlueZPeripheralError("\(adapterPath) has no Address")
            }
            address = text
        } catch let error as DBusError {
            throw BlueZPeripheralError("adapter \(adapterPath.rawValue) is not available (is bluetoothd running?)", underlying: error)
        }
        if try await property("Powered").bool != true {
            log("powering on \(adapterPath)")
            try await BlueZPeripheralError.step("cannot power on \(adapterPath)") {
                _ = try await bus.call(
                    .methodCall(
                        destination: "org.bluez", path: adapterPath, interface: propertiesInterface, member: "Set",
                        arguments: [.string(adapterInterface), .string("Powered"), .variant(.bool(true))]))
            }
        }
        return address
    }

    private func run(onReady: @escaping @Sendable (BlueZPeripheral) async throws -> Void) async throws {
        let result: Result<Void, any Error>
        do {
            // Subscribed before anything is registered, so that no connection is missed. One
            // stream for every signal of bluetoothd keeps them in the order it sent them.
            let signals = try await BlueZPeripheralError.step("cannot watch BlueZ's signals") {
                try await bus.signals(matching: DBusMatchRule(sender: "org.bluez"))
            }
            try await exportObjects()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await self.sendNotifications() }
                group.addTask { try await self.watchDevices(signals) }
                group.addTask {
                    try await self.register()
                    await self.adoptConnectedCentral()
                    try await onReady(self)
                    // Serve until cancelled, advertising again on the configured clock if asked to.
                    guard let interval = self.configuration.readvertiseInterval else {
                        await Self.untilCancelled()
                        return
                    }
                    while !Task.isCancelled {
                        try? await self.configuration.clock.sleep(for: interval)
                        if !Task.isCancelled, !self.isConnected { await self.readvertise() }
                    }
                }
                // The first task to end (or throw) ends the service.
                _ = try await group.next()
                group.cancelAll()
            }
            result = .success(())
        } catch {
            result = .failure(error)
        }
        // Cleanup must run even though the task is cancelled: an unstructured task is not.
        await Task { await self.shutDown() }.value
        switch result {
        case .success:
            return
        case .failure(let error):
            if error is CancellationError { return }
            throw error
        }
    }

    private func exportObjects() async throws {
        try await BlueZPeripheralError.step("cannot export the GATT application") {
            try await bus.export(DBusObject(path: application.root, isObjectManager: true))
            for service in application.services {
                try await bus.export(DBusObject(path: service.path, interfaces: GATTApplication.serviceProperties(service)))
            }
            for characteristic in application.characteristics {
                try await bus.export(
                    DBusObject(path: characteristic.path, interfaces: GATTApplication.characteristicProperties(characteristic, security: application.security))
                    {
                        [self] call in
                        try await self.handle(call, for: characteristic)
                    })
            }
            let log = configuration.log
            try await bus.export(
                advertisement.object(onRelease: { log("BlueZ released the advertisement") }))
        }
    }

    private var advertisement: LEAdvertisement {
        LEAdvertisement(path: advertisementPath, serviceUUIDs: application.services.map(\.uuid), localName: configuration.localName)
    }

    /// `RegisterApplication`, then `RegisterAdvertisement` (with a smaller advertisement if BlueZ
    /// finds it too long).
    private func register() async throws {
        try await BlueZPeripheralError.step("GattManager1.RegisterApplication on \(adapterPath) failed") {
            _ = try await bus.call(
                .methodCall(
                    destination: "org.bluez", path: adapterPath, interface: "org.bluez.GattManager1", member: "RegisterApplication",
                    arguments: [.objectPath(application.root), .variantDictionary([:])]))
        }
        configuration.log("registered the GATT application \(application.root) on \(adapterPath)")
        if configuration.security != .open {
            // The default agent: bluetoothd asks it about pairings a central starts.
            let agent = BlueZPairingAgent(
                path: DBusObjectPath(configuration.objectRoot.rawValue + "_agent") ?? "/org/swiftbleota/agent",
                adapterPath: adapterPath, passkey: configuration.passkey)
            let log = configuration.log
            try await BlueZPeripheralError.step("registering the pairing agent failed") {
                try await agent.register(on: bus, asDefault: true, log: log)
            }
            configuration.log(
                "characteristics need an \(configuration.security == .authenticated ? "authenticated, " : "")encrypted link; pairing agent \(agent.capability)")
        }
        var candidates = [advertisement] + advertisement.fallbacks
        while true {
            let candidate = candidates.removeFirst()
            do {
                _ = try await bus.call(
                    .methodCall(
                        destination: "org.bluez", path: adapterPath, interface: "org.bluez.LEAdvertisingManager1",
                        member: "RegisterAdvertisement", arguments: [.objectPath(candidate.path), .variantDictionary([:])]))
                configuration.log(
                    "advertising \(candidate.serviceUUIDs.map(\.description).joined(separator: ", ")) as '\(candidate.localName)' on \(adapterPath)")
                return
            } catch let error as DBusError where error.name.rawValue == "org.bluez.Error.InvalidLength" && !candidates.isEmpty {
                configuration.log("advertisement too long (\(error)); trying fewer service UUIDs")
                await bus.unexport(candidate.path)
                try await bus.export(candidates[0].object(onRelease: {}))
            } catch let error as DBusError {
                throw BlueZPeripheralError("LEAdvertisingManager1.RegisterAdvertisement on \(adapterPath) failed", underlying: error)
            }
        }
    }

    /// Stops and starts advertising again (see ``Configuration/readvertiseInterval``).
    private func readvertise() async {
        let manager = "org.bluez.LEAdvertisingManager1"
        do {
            _ = try await bus.call(
                .methodCall(
                    destination: "org.bluez", path: adapterPath, interface: manager, member: "UnregisterAdvertisement",
                    arguments: [.objectPath(advertisementPath)]), timeout: .seconds(10))
            _ = try await bus.call(
                .methodCall(
                    destination: "org.bluez", path: adapterPath, interface: manager, member: "RegisterAdvertisement",
                    arguments: [.objectPath(advertisementPath), .variantDictionary([:])]), timeout: .seconds(10))
        } catch {
            configuration.log("advertising again failed: \(error)")
        }
    }

    /// Disconnects the central (as a device switched off would drop its link), unregisters the
    /// advertisement and the application, and closes the connection.
    private func shutDown() async {
        outgoing.finish()
        if let central = state.withLock({ $0.central }) {
            configuration.log("disconnecting \(central) before stopping")
            _ = try? await bus.call(
                .methodCall(destination: "org.bluez", path: central, interface: Self.deviceInterface, member: "Disconnect"),
                timeout: .seconds(10))
        }
        for (interface, member, path) in [
            ("org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement", advertisementPath),
            ("org.bluez.GattManager1", "UnregisterApplication", application.root),
        ] {
            do {
                _ = try await bus.call(
                    .methodCall(destination: "org.bluez", path: adapterPath, interface: interface, member: member, arguments: [.objectPath(path)]),
                    timeout: .seconds(5))
            } catch {
                // Not registered (registration failed) or BlueZ went away: nothing to undo.
                configuration.log("\(member): \(error)")
            }
        }
        await bus.close()
        configuration.log("stopped serving on \(adapterPath)")
    }

    // MARK: - State

    /// What the peripheral has seen so far.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Whether a central is connected.
    public var isConnected: Bool { state.withLock { $0.central != nil } }

    /// Runs `body` with the model to itself.
    func withModel<T: Sendable>(_ body: () -> T) -> T {
        modelLock.withLock { _ in body() }
    }

    // MARK: - PeripheralContext

    public var flash: any FlashStorage { configuration.flash }

    public func isSubscribed(to characteristic: CharacteristicID) -> Bool {
        state.withLock { $0.subscriptions.contains(characteristic) }
    }

    public func notify(_ value: Data, on characteristic: CharacteristicID) {
        guard let exported = application.characteristic(characteristic),
            !exported.properties.isDisjoint(with: [.notify, .indicate])
        else {
            configuration.log("notify on \(characteristic), which cannot notify: ignored")
            return
        }
        state.withLock { $0.statistics.notifications += 1 }
        outgoing.yield(OutgoingNotification(path: exported.path, value: value))
    }

    public func reboot(after delay: Duration) {
        Task {
            try? await self.configuration.clock.sleep(for: delay)
            await self.performReboot()
        }
    }

    /// Suspends the calling task until it is cancelled, waiting on nothing (no clock, no timer).
    private static func untilCancelled() async {
        let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
        await withTaskCancellationHandler {
            for await _ in stream {}
        } onCancel: {
            continuation.finish()
        }
    }

    /// Hands notifications to BlueZ in the order the model made them.
    private func sendNotifications() async {
        for await notification in outgoingStream {
            do {
                try await bus.setProperties(
                    ["Value": .bytes(notification.value)], of: GATTApplication.characteristicInterface, at: notification.path)
            } catch {
                configuration.log("notification on \(notification.path) not sent: \(error)")
            }
        }
    }
}
#endif
