import Foundation
import OTACore
import Synchronization

/// A simulated device: a protocol's ``DeviceModel`` on modelled hardware (flash, processing
/// time) that outlives connections, so an update can be interrupted and picked up again.
public final class SimulatedDevice: Sendable {
    private struct State {
        var busyUntil: Duration = .zero
        var connection: SimulatedConnection?
        var reachable = true
        var faults = LinkFaults()
        var dataWritesDelivered = 0
        var dataBytesDelivered = 0
        var reboots = 0
    }

    /// The hardware profile.
    public let profile: DeviceProfile
    /// The protocol's device side.
    public let model: any DeviceModel
    /// The update slot.
    public let flash: SimulatedFlash
    /// The identifier used to address it ("sim:esp32s3-mtu244-2m").
    public let address: String
    let simulation: Simulation
    private let state = Mutex(State())

    /// Creates a device running `model` on `profile`'s hardware inside `simulation`.
    public init(profile: DeviceProfile, model: any DeviceModel, simulation: Simulation) {
        self.profile = profile
        self.model = model
        self.simulation = simulation
        self.flash = SimulatedFlash(capacity: profile.slotSize, timing: profile.flash)
        self.address = "sim:\(profile.name)"
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

    /// How many times the device restarted.
    public var rebootCount: Int { state.withLock { $0.reboots } }

    /// The connection currently open to the device, if any.
    public var connection: SimulatedConnection? { state.withLock { $0.connection } }

    /// Drops the current connection, if any, as a supervision timeout would.
    public func dropConnection(reason: String = "supervision timeout (device out of range)") {
        connection?.drop(DisconnectReason(reason))
    }

    /// Restarts the device now: the link drops, RAM state is lost, flash is kept.
    public func reboot() {
        dropConnection(reason: "device rebooted")
        state.withLock { state in
            state.reboots += 1
            state.busyUntil = simulation.now
        }
        model.rebooted()
    }

    // MARK: - Used by the link

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
        }
    }

    /// Folds flash work done so far into the device's busy time; returns when it will be idle.
    func settle(at time: Duration) -> Duration {
        let cost = flash.takePendingCost()
        return state.withLock { state in
            state.busyUntil = max(state.busyUntil, time) + cost
            return state.busyUntil
        }
    }

    /// Whether the device has so much unfinished work that its controller refuses packets.
    func isBackedUp(at time: Duration) -> Bool {
        settle(at: time) - time > profile.backlogLimit
    }

    /// Applies link faults to a data write about to be delivered; `nil` means it is lost.
    /// Also reports whether the link should drop after it.
    func applyFaults(to value: Data) -> (value: Data?, disconnect: Bool) {
        state.withLock { state in
            let index = state.dataWritesDelivered
            state.dataWritesDelivered += 1
            if state.faults.dropWrites.contains(index) { return (nil, false) }
            var delivered = value
            if state.faults.corruptWrites.contains(index), let first = delivered.indices.first {
                delivered[first] ^= 0xFF
            }
            state.dataBytesDelivered += delivered.count
            let limit = state.faults.disconnectAfterBytes
            let disconnect = limit.map { state.dataBytesDelivered >= $0 } ?? false
            if disconnect { state.faults.disconnectAfterBytes = nil }
            return (delivered, disconnect)
        }
    }
}
