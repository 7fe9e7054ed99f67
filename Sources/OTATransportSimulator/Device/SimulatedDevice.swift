import Foundation
import OTACore
import Synchronization

/// A simulated device: a protocol's ``DeviceModel`` on modelled hardware (flash, processing
/// time) that outlives connections, so an update can be interrupted and picked up again.
public final class SimulatedDevice: Sendable {
    private struct State {
        var connection: SimulatedConnection?
        var reachable = true
        var faults = LinkFaults() {
            didSet { faultsArmed = faults != LinkFaults() }
        }
        /// Whether any fault is set: when none is (the usual case) a data write takes the path
        /// that looks nothing up.
        var faultsArmed = false
        var dataWritesDelivered = 0
        var dataBytesDelivered = 0
        var reboots = 0
        var held: Data?
        var dying = false
        var rebootsPending = 0
        var name: String?
        var persistence: Persistence?
        var persistPending = false
        var dataBytesReceived = 0
    }

    /// How a host keeps the device beyond its process as it goes, as a real device keeps what it
    /// has acknowledged whatever happens to the central: set ``persistence``.
    public struct Persistence: Sendable {
        /// Called on the simulation's thread after the device decided to answer the central (a
        /// notification, a write or read response) and before the answer reaches the central,
        /// at the same virtual time; answers at one instant are kept once. Keep what the device
        /// holds now: whatever the central learns from the answer is then already kept.
        public var replying: @Sendable () -> Void
        /// Called as data writes arrive, with ``SimulatedDevice/dataBytesReceived`` (the bytes
        /// received since the device was made, across processes when the host restores it).
        public var received: (@Sendable (Int) -> Void)?

        /// Describes what to call.
        public init(replying: @escaping @Sendable () -> Void, received: (@Sendable (Int) -> Void)? = nil) {
            self.replying = replying
            self.received = received
        }
    }

    /// The hardware profile.
    public let profile: DeviceProfile
    /// The protocol's device side.
    public let model: any DeviceModel
    /// The update slot.
    public let flash: SimulatedFlash
    /// The identifier used to address it ("sim:esp32s3-mtu244-2m").
    public let address: String
    // Unowned: the simulation's timers hold closures that hold devices; a strong reference back
    // would keep every simulated world alive. A device must not outlive its simulation.
    unowned let simulation: Simulation
    private let state = Mutex(State())
    /// Whether a stall fault holds the device: asked before every packet, so an atomic rather
    /// than a lock (set and cleared under `state`'s lock, on the simulation's thread).
    private let stalled = Atomic<Bool>(false)
    /// Whether ``persistence`` is set (stored under `state`'s lock with it): a device without one,
    /// the usual case, answers without taking the lock (``willReply()``).
    private let hasPersistence = Atomic<Bool>(false)
    /// The battery level, percent, as a `Double`'s bits: drained at every packet, so an atomic
    /// rather than a lock round per write. Meaningless without a Battery service (`hasBattery`,
    /// fixed by the profile).
    private let battery: Atomic<UInt64>
    private let hasBattery: Bool

    /// Creates a device running `model` on `profile`'s hardware inside `simulation`, reached at
    /// `address` (by default `sim:` and the profile's name; a named fleet device passes its own).
    ///
    /// Every device of a simulation is in range of its central: a scan for a device that came
    /// back elsewhere (``SimulatedConnector/reappeared(matching:within:)``) hears them all.
    public init(profile: DeviceProfile, model: any DeviceModel, simulation: Simulation, address: String? = nil, name: String? = nil) {
        self.profile = profile
        self.model = model
        self.simulation = simulation
        self.flash = SimulatedFlash(capacity: profile.slotSize, timing: profile.flash)
        self.address = address ?? "sim:\(profile.name)"
        hasBattery = profile.standardServices.batteryLevel != nil
        battery = Atomic(Double(profile.standardServices.batteryLevel ?? 0).bitPattern)
        state.withLock { $0.name = name }
        simulation.register(self)
    }

    /// The address it advertises at now: its own, or where its firmware moved it (a bootloader
    /// at the next address).
    public var advertisedAddress: String {
        model.advertising(hardwareAddress: address)?.address ?? address
    }

    /// The name it advertises now: its firmware's, or the one it was made with.
    public var advertisedName: String? {
        model.advertising(hardwareAddress: address)?.name ?? state.withLock { $0.name }
    }

    /// Whether it advertises: reachable, not connected, and not about to restart (a device told
    /// to restart drops its link and stays silent until it has).
    public var isAdvertising: Bool {
        state.withLock { $0.reachable && $0.connection == nil && $0.rebootsPending == 0 }
    }

    /// What a scan hears from it now, `nil` while it does not advertise.
    public var discovery: DiscoveredDevice? {
        guard isAdvertising else { return nil }
        return DiscoveredDevice(
            address: advertisedAddress, advertisement: Advertisement(name: advertisedName, serviceUUIDs: model.services.map(\.uuid)))
    }

    /// Restarts the device after `delay` of virtual time; until then it does not advertise.
    func scheduleReboot(after delay: Duration) {
        state.withLock { $0.rebootsPending += 1 }
        simulation.schedule(at: simulation.now + delay) { [self] in
            state.withLock { $0.rebootsPending -= 1 }
            reboot()
        }
    }

    /// The battery level the device reports, 0–100 %, or `nil` when it has no Battery service.
    /// It starts at the profile's and drains as data arrives
    /// (``StandardServicesProfile/batteryDrainPer100kB``); setting it changes the level, not
    /// whether the service exists.
    public var batteryLevel: Int? {
        get {
            guard hasBattery else { return nil }
            return Int(max(0, min(100, Double(bitPattern: battery.load(ordering: .acquiring)).rounded(.down))))
        }
        set {
            guard hasBattery, let newValue else { return }
            battery.store(Double(max(0, min(100, newValue))).bitPattern, ordering: .releasing)
        }
    }

    /// Faults the link injects on the way to this device.
    public var faults: LinkFaults {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    /// Whether a central can connect (a device out of range or switched off cannot).
    public var isReachable: Bool {
        get { state.withLock { $0.reachable } }
        set { state.withLock { $0.reachable = newValue } }
    }

    /// What keeps the device beyond its process; `nil` (the default): nothing, it lasts as long
    /// as its simulation.
    public var persistence: Persistence? {
        get { state.withLock { $0.persistence } }
        set {
            state.withLock {
                $0.persistence = newValue
                hasPersistence.store(newValue != nil, ordering: .relaxed)
            }
        }
    }

    /// Payload bytes of data writes (writes without response) the device took in over its life,
    /// duplicates and re-sent ones included: what the device was sent, as opposed to what it
    /// kept. A host that keeps the device across processes restores it by setting it.
    public var dataBytesReceived: Int {
        get { state.withLock { $0.dataBytesReceived } }
        set { state.withLock { $0.dataBytesReceived = newValue } }
    }

    /// How many times the device restarted.
    public var rebootCount: Int { state.withLock { $0.reboots } }

    /// Data writes (writes without response) that reached the device's link layer since it was
    /// made, across connections: the count ``LinkFaults``' write indices refer to, so a test can
    /// tell which of its indexed faults fired.
    public var dataWritesArrived: Int { state.withLock { $0.dataWritesDelivered } }

    /// The connection currently open to the device, if any.
    public var connection: SimulatedConnection? { state.withLock { $0.connection } }

    /// Drops the current connection, if any, as a supervision timeout would.
    public func dropConnection(reason: String = "supervision timeout (device out of range)") {
        connection?.drop(DisconnectReason(reason))
    }

    /// Restarts the device now: the link drops, RAM state is lost, flash is kept.
    public func reboot() {
        dropConnection(reason: "device rebooted")
        state.withLock { $0.reboots += 1 }
        flash.resetBusy(to: simulation.now)
        model.rebooted()
    }

    // MARK: - Used by the link

    /// The standard services' characteristics, merged into the GATT table of every connection.
    var standardCharacteristics: [CharacteristicID: CharacteristicProperties] {
        var table: [CharacteristicID: CharacteristicProperties] = [:]
        for service in profile.standardServices.services { table.merge(service.characteristicTable) { $1 } }
        return table
    }

    /// The answer to a read of a standard characteristic, or `nil` when `id` is not one (the
    /// protocol's model answers).
    func readStandard(_ id: CharacteristicID) -> Result<Data, ATTStatus>? {
        if id == StandardServices.batteryLevel, let level = batteryLevel { return .success(Data([UInt8(level)])) }
        return profile.standardServices.deviceInformationValue(id).map { .success($0) }
    }

    /// The device is about to answer the central: its ``persistence`` keeps it first.
    func willReply() {
        guard hasPersistence.load(ordering: .relaxed) else { return }
        let persistence: Persistence? = state.withLock { state in
            guard let persistence = state.persistence, !state.persistPending else { return nil }
            state.persistPending = true
            return persistence
        }
        guard let persistence else { return }
        // After the model's call returns (it may hold its own lock now), before the answer,
        // which leaves at a later connection event.
        simulation.schedule(at: simulation.now) { [self] in
            state.withLock { $0.persistPending = false }
            persistence.replying()
        }
    }

    /// A data write of `bytes` reached the model.
    func receivedData(_ bytes: Int) {
        let (total, persistence) = state.withLock { state in
            state.dataBytesReceived += bytes
            return (state.dataBytesReceived, state.persistence)
        }
        persistence?.received?(total)
    }

    /// A data write of `count` bytes arrived at the link layer. With no fault set, nothing held
    /// back and the link not dying (the usual case) it counts the write, its bytes delivered and
    /// received and drains the battery in one step, and returns what to tell the
    /// ``persistence`` (deliver the value unchanged); otherwise it returns `nil` and the write
    /// goes through ``applyFaults(to:)``, ``consumeEnergy(receiving:)`` and
    /// ``receivedData(_:)``, one delivery at a time.
    func arrivedUnfaulted(bytes count: Int) -> (total: Int, received: (@Sendable (Int) -> Void)?)? {
        // Given the length, not the value (each `Data.count` switches over its representations);
        // a held write looked for without copying it out.
        let drain = batteryDrain(receiving: count)
        return state.withLock { state in
            guard !state.faultsArmed, !state.dying else { return nil }
            if case .some = state.held { return nil }
            state.dataWritesDelivered += 1
            state.dataBytesDelivered += count
            drainBattery(by: drain)
            state.dataBytesReceived += count
            return (state.dataBytesReceived, state.persistence?.received)
        }
    }

    /// Drains the battery for `bytes` of data received.
    func consumeEnergy(receiving bytes: Int) {
        drainBattery(by: batteryDrain(receiving: bytes))
    }

    /// Takes `drain` percent off the battery level, not below 0: the same arithmetic as under a
    /// lock, as one compare-and-exchange (a setter racing with it either goes first or is drained).
    private func drainBattery(by drain: Double) {
        guard hasBattery else { return }
        var level = battery.load(ordering: .acquiring)
        while true {
            let drained = max(0, Double(bitPattern: level) - drain).bitPattern
            let (exchanged, found) = battery.compareExchange(expected: level, desired: drained, ordering: .acquiringAndReleasing)
            if exchanged { return }
            level = found
        }
    }

    /// The battery level, in percent, that receiving `bytes` costs.
    private func batteryDrain(receiving bytes: Int) -> Double {
        profile.standardServices.batteryDrainPer100kB * Double(bytes) / 100_000
    }

    func attach(_ connection: SimulatedConnection) -> Bool {
        state.withLock { state in
            guard state.connection == nil else { return false }
            state.connection = connection
            return true
        }
    }

    func detach(_ connection: SimulatedConnection) {
        state.withLock { state in
            if state.connection === connection { state.connection = nil }
            state.held = nil
            stalled.store(false, ordering: .relaxed)
            state.dying = false
        }
    }

    /// Whether a stall fault holds the device: its controller refuses packets whatever its
    /// backlog.
    var isStalled: Bool { stalled.load(ordering: .relaxed) }

    /// What the link does with one data write after faults.
    struct FaultOutcome {
        /// Values to deliver now, in order (none when lost or held back, two when duplicated or
        /// released after a held one).
        var deliveries: [Data]
        /// Drop the link after delivering.
        var disconnect = false
        /// Reboot the device after delivering.
        var reboot = false
        /// The data path just died: drop the link after this long.
        var dropAfter: Duration?
    }

    /// Applies link faults to a data write about to be delivered.
    func applyFaults(to value: Data) -> FaultOutcome {
        state.withLock { state in
            let index = state.dataWritesDelivered
            state.dataWritesDelivered += 1
            let faults = state.faults
            if state.dying || faults.dropWrites.contains(index) { return FaultOutcome(deliveries: []) }
            var delivered = value
            if faults.corruptWrites.contains(index), let last = delivered.indices.last {
                delivered[last] ^= 0xFF
            }
            if faults.reorderWrites.contains(index), state.held == nil {
                state.held = delivered
                return FaultOutcome(deliveries: [])
            }
            var deliveries = [delivered]
            if faults.duplicateWrites.contains(index) { deliveries.append(delivered) }
            if let held = state.held {
                deliveries.append(held)
                state.held = nil
            }
            state.dataBytesDelivered += deliveries.reduce(0) { $0 + $1.count }
            let total = state.dataBytesDelivered
            var outcome = FaultOutcome(deliveries: deliveries)
            if let threshold = faults.disconnectAtBytes.first(where: { $0 <= total }) {
                state.faults.disconnectAtBytes.removeAll { $0 == threshold }
                outcome.disconnect = true
            }
            if let threshold = faults.rebootAtBytes.first(where: { $0 <= total }) {
                state.faults.rebootAtBytes.removeAll { $0 == threshold }
                outcome.reboot = true
            }
            if let dying = faults.dyingLinkAtBytes, total >= dying {
                state.faults.dyingLinkAtBytes = nil
                state.dying = true
                outcome.dropAfter = faults.dyingLinkDuration
            }
            if let stall = faults.stallAtBytes, total >= stall {
                state.faults.stallAtBytes = nil
                stalled.store(true, ordering: .relaxed)
            }
            if let failing = faults.failFlashAtBytes, total >= failing {
                state.faults.failFlashAtBytes = nil
                flash.injectFailure("flash failure (injected fault at byte \(failing))")
            }
            return outcome
        }
    }
}
