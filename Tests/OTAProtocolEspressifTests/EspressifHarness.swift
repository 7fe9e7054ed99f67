import Foundation
import OTACore
import OTAProtocolEspressif
import OTATestSupport
import OTATransportSimulator
import Synchronization

/// A device model in front of the Espressif one that damages or cuts the link at chosen
/// firmware writes, whatever their write kind (the simulator's `LinkFaults` act on writes
/// without response only, and `ble_ota` takes firmware writes with response).
final class FaultyFirmwareWrites: DeviceModel {
    struct Faults: Sendable {
        /// Firmware writes (counted from 0 over the device's life) whose byte 10 is flipped.
        var corrupt: Set<Int> = []
        /// Firmware writes before which the link drops.
        var dropLinkAt: Set<Int> = []
        /// Firmware writes the device never sees (lost in its stack).
        var swallow: Set<Int> = []
        /// Every firmware write from this one on is lost.
        var swallowFrom: Int?
    }

    let inner: EspressifDeviceModel
    let simulation: Simulation
    private let state: Mutex<(faults: Faults, writes: Int, device: SimulatedDevice?)>

    init(_ inner: EspressifDeviceModel, simulation: Simulation, faults: Faults) {
        self.inner = inner
        self.simulation = simulation
        state = Mutex((faults, 0, nil))
    }

    func attach(_ device: SimulatedDevice) { state.withLock { $0.device = device } }

    var services: [GATTServiceDefinition] { inner.services }
    func connected(_ peripheral: any PeripheralContext) { inner.connected(peripheral) }
    func disconnected() { inner.disconnected() }
    func rebooted() { inner.rebooted() }
    func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        inner.read(characteristic, peripheral: peripheral)
    }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        guard characteristic == inner.profile.firmware else { return inner.write(value, to: characteristic, kind: kind, peripheral: peripheral) }
        let (index, faults, device) = state.withLock { state in
            defer { state.writes += 1 }
            return (state.writes, state.faults, state.device)
        }
        if faults.dropLinkAt.contains(index), let device {
            _ = simulation.schedule(at: simulation.now) { device.dropConnection(reason: "link lost (test)") }
            return .success
        }
        if faults.swallow.contains(index) || faults.swallowFrom.map({ index >= $0 }) == true { return .success }
        var value = value
        if faults.corrupt.contains(index), value.count > 10 { value[value.startIndex + 10] ^= 0x5A }
        return inner.write(value, to: characteristic, kind: kind, peripheral: peripheral)
    }
}

/// A simulated ESP device running the Espressif model, optionally behind ``FaultyFirmwareWrites``.
struct EspressifHarness {
    var base: UpdateHarness
    let model: EspressifDeviceModel

    init(
        profile: DeviceProfile, variant: EspressifVariant = .bluedroid, sessionSurvivesDisconnect: Bool = false,
        faults: FaultyFirmwareWrites.Faults = .init(), seed: UInt64 = 1
    ) {
        let model = EspressifDeviceModel(variant: variant, sessionSurvivesDisconnect: sessionSurvivesDisconnect)
        self.model = model
        nonisolated(unsafe) var wrapper: FaultyFirmwareWrites?
        base = UpdateHarness(profile: profile, seed: seed) { simulation in
            let faulty = FaultyFirmwareWrites(model, simulation: simulation, faults: faults)
            wrapper = faulty
            return faulty
        }
        wrapper?.attach(base.device)
    }

    var device: SimulatedDevice { base.device }

    /// Random bytes of `size` (the client's image check off), or an app image of about `size`.
    static func image(size: Int, seed: UInt64 = 7) throws -> FirmwareImage {
        try UpdateHarness.image(size: size, seed: seed)
    }

    static func appImage(payload: Int, seed: UInt64 = 7) throws -> FirmwareImage {
        try FirmwareImage(bytes: EspressifAppImage.wrap(UpdateHarness.image(size: payload, seed: seed).bytes), name: "app.bin")
    }

    func update(_ image: FirmwareImage, variant: EspressifVariant = .bluedroid, check: EspressifImageCheck = .none) async throws -> UpdateHarness.Outcome {
        try await base.update(image, using: EspressifClient(configuration: .init(variant: variant, imageCheck: check)))
    }
}
