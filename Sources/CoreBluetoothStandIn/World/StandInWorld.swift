import Foundation
import OTACore
import OTATransportSimulator

/// The control surface of the stand-in, for tests: the simulated world its central managers live
/// in (the radio, the peripherals around, the app's process), kept apart from the CoreBluetooth
/// API surface.
///
/// A manager binds to ``current`` when it is created: bind a world with ``run(_:)`` (which also
/// runs the body in the world's virtual time) or ``withCurrent(_:)``. Without a binding, managers
/// join ``shared``.
///
/// ```swift
/// let world = StandInWorld(seed: 1)
/// let handle = world.addPeripheral(device, name: "lock")
/// try await world.run {
///     let central = CoreBluetoothCentral(clock: world.clock)
///     …
/// }
/// ```
public final class StandInWorld: Sendable {
    /// What the stand-in's radio and OS do, beyond the link model of each device.
    public struct Configuration: Sendable, Hashable {
        /// The ATT MTU the phone asks for (iOS 16+ asks 517 or 527; iOS 10–15 often 185).
        public var centralMTU = 517
        /// Depth of the OS queue of writes without response per connection (Nordic's mock: 20).
        /// A write that finds it full is dropped without a word, as iOS does when
        /// `canSendWriteWithoutResponse` is false.
        public var writeQueueDepth = 20
        /// `canSendWriteWithoutResponse` reads false until the first write without response of
        /// a connection, as it often does on iOS (section 7.3 a of corebluetooth-api.md).
        public var canSendIsFalseBeforeFirstWrite = true
        /// Whether `peripheralIsReady(toSendWriteWithoutResponse:)` is delivered when the queue
        /// has room again (false: the callback never comes, section 7.3 b).
        public var deliversReadyCallback = true
        /// Deliver a ready callback after every write without response the link takes, even
        /// when nothing was paused (section 7.3 c).
        public var spuriousReadyCallbacks = false
        /// Time from a state change of the radio to `centralManagerDidUpdateState`.
        public var stateUpdateLatency: Duration = .milliseconds(1)
        /// Time between advertisements a scan hears.
        public var advertisingInterval: Duration = .milliseconds(100)

        /// The defaults.
        public init() {}
    }

    /// How the next connection attempt to a peripheral fails.
    public enum ConnectFault: Sendable, Hashable {
        /// `didFailToConnect` with `CBError.connectionFailed`.
        case failToConnect
        /// `didFailToConnect` and then `didDisconnectPeripheral` for the same attempt (a race
        /// some stacks and wrappers show; the transport must report one failure).
        case failToConnectThenDisconnect
        /// `didDisconnectPeripheral` with `CBError.connectionTimeout` and no `didConnect` (iOS at
        /// the edge of range).
        case disconnectWithoutConnect
    }

    /// The simulation every peripheral of this world lives in.
    public let simulation: Simulation
    let lock = NSRecursiveLock()
    let state: Unchecked<Box>

    final class Box {
        var configuration = Configuration()
        var radio: CBManagerState = .poweredOn
        var authorization: CBManagerAuthorization = .allowedAlways
        var peripherals: [StandInPeripheral] = []
        var managers: [WeakManager] = []
        var misuse: [String] = []
        var nextIdentifier = 1
    }

    struct WeakManager {
        weak var manager: CBCentralManager?
    }

    /// The world managers join when none is bound.
    public static let shared = StandInWorld(seed: 1)

    @TaskLocal static var bound: StandInWorld?

    /// The world a manager created now joins: the bound one, else ``shared``.
    public static var current: StandInWorld { bound ?? shared }

    /// Creates a world with its own simulation.
    public init(seed: UInt64 = 1) {
        simulation = Simulation(seed: seed)
        state = Unchecked(Box())
    }

    /// The virtual clock of the world; give it to the transport and the engine.
    public var clock: VirtualClock { simulation.clock }

    func withLock<T>(_ body: (Box) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(state.value)
    }

    /// What the stand-in's OS does.
    public var configuration: Configuration {
        get { withLock { $0.configuration } }
        set { withLock { $0.configuration = newValue } }
    }

    /// Runs `body` in the world's virtual time with the world bound, so that managers created
    /// inside join it.
    public func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await simulation.run {
            try await Self.$bound.withValue(self) { try await body() }
        }
    }

    /// Runs `body` with the world bound (for creating managers outside ``run(_:)``).
    public func withCurrent<T>(_ body: () throws -> T) rethrows -> T {
        try Self.$bound.withValue(self) { try body() }
    }

    // MARK: - Peripherals

    /// Puts a simulated device within range, advertising `name` and its model's services.
    ///
    /// - Returns: the handle tests inspect and control it through; its ``StandInPeripheral/identifier``
    ///   is what `CBPeripheral.identifier` reads (deterministic: the n-th peripheral of a world).
    @discardableResult
    public func addPeripheral(
        _ device: SimulatedDevice, name: String? = nil, advertisedServices: [GATTUUID]? = nil, rssi: Int = -60,
        manufacturerData: Data? = nil
    ) -> StandInPeripheral {
        withLock { box in
            let peripheral = StandInPeripheral(
                world: self, identifier: makeIdentifier(box), device: device, address: device.address, name: name ?? device.profile.name,
                advertisedServices: advertisedServices, rssi: rssi, manufacturerData: manufacturerData)
            box.peripherals.append(peripheral)
            return peripheral
        }
    }

    /// The n-th identifier of this world.
    private func makeIdentifier(_ box: Box) -> UUID {
        defer { box.nextIdentifier += 1 }
        return UUID(uuidString: String(format: "00000000-0000-4000-8000-%012X", box.nextIdentifier))!
    }

    /// Every peripheral `device` has been heard as, the one ``addPeripheral(_:name:advertisedServices:rssi:manufacturerData:)``
    /// made first: one per address it advertised at (a bootloader at the next address is a new
    /// identifier, as on iOS).
    public func peripherals(of device: SimulatedDevice) -> [StandInPeripheral] {
        withLock { box in box.peripherals.filter { $0.device === device } }
    }

    /// The peripherals heard now: for each device in range, the one at the address it advertises
    /// at, made (with a new identifier) the first time the device advertises there.
    var advertising: [StandInPeripheral] {
        withLock { box in
            var heard: [StandInPeripheral] = []
            var devices: [SimulatedDevice] = []
            for record in box.peripherals where !devices.contains(where: { $0 === record.device }) { devices.append(record.device) }
            for device in devices {
                let address = device.advertisedAddress.uppercased()
                let record: StandInPeripheral
                if let known = box.peripherals.first(where: { $0.device === device && $0.address == address }) {
                    record = known
                } else {
                    // Heard at a new address: a new peripheral, named and shown as the first.
                    guard let first = box.peripherals.first(where: { $0.device === device }) else { continue }
                    record = StandInPeripheral(
                        world: self, identifier: makeIdentifier(box), device: device, address: address, name: first.configuredName,
                        advertisedServices: nil, rssi: first.rssi, manufacturerData: first.manufacturerData)
                    box.peripherals.append(record)
                }
                if record.isAdvertising { heard.append(record) }
            }
            return heard
        }
    }

    /// The peripheral with `identifier`.
    public func peripheral(_ identifier: UUID) -> StandInPeripheral? {
        withLock { box in box.peripherals.first { $0.identifier == identifier } }
    }

    var peripherals: [StandInPeripheral] { withLock { $0.peripherals } }

    // MARK: - Radio and permissions

    /// The state of the phone's Bluetooth (`.poweredOn`, `.poweredOff`, `.unsupported`, `.resetting`).
    public var radio: CBManagerState { withLock { $0.radio } }

    /// Whether the user allowed Bluetooth for the app. Anything but `.allowedAlways` puts every
    /// manager in `.unauthorized` (as Nordic's mock does).
    public var authorization: CBManagerAuthorization {
        get { withLock { $0.authorization } }
        set {
            withLock { $0.authorization = newValue }
            radioChanged()
        }
    }

    /// Switches Bluetooth off: scans stop and every link drops, with no `didDisconnectPeripheral`
    /// (as recent iOS); managers only see the state change.
    public func powerOff() { setRadio(.poweredOff) }

    /// Switches Bluetooth on again; nothing resumes by itself.
    public func powerOn() { setRadio(.poweredOn) }

    /// Sets the radio's state (`.unsupported` for a device without Bluetooth LE, `.resetting`).
    public func setRadio(_ radio: CBManagerState) {
        withLock { $0.radio = radio }
        radioChanged()
    }

    /// The state a manager of this world reports.
    var managerState: CBManagerState {
        withLock { box in box.authorization == .allowedAlways ? box.radio : .unauthorized }
    }

    private func radioChanged() {
        let state = managerState
        if state != .poweredOn {
            for peripheral in peripherals { peripheral.link?.close(.silent) }
        }
        for manager in managers { manager.radioChanged(to: state) }
    }

    // MARK: - The app's process

    /// The system terminates the app (memory pressure while in the background): its managers go
    /// silent and ignore every call; links of managers created with a restore identifier stay up,
    /// held by the system, the others are closed. A manager created later with the same
    /// identifier gets them back through `willRestoreState`.
    public func terminateApp() {
        for manager in managers { manager.terminate() }
    }

    var managers: [CBCentralManager] {
        withLock { box in
            box.managers.removeAll { $0.manager == nil }
            return box.managers.compactMap(\.manager)
        }
    }

    func register(_ manager: CBCentralManager) {
        withLock { $0.managers.append(WeakManager(manager: manager)) }
    }

    /// Calls the stand-in ignored because they are API misuse on iOS (a call while not powered on).
    public var misuseLog: [String] { withLock { $0.misuse } }

    func logMisuse(_ text: String) {
        withLock { $0.misuse.append(text) }
    }
}

/// Carries a value the stand-in confines itself (behind the world's lock or on a manager's queue)
/// across a `@Sendable` boundary.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
