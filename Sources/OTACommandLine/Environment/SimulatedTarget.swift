import Foundation
import OTACore
import OTATransportSimulator

/// The device `--device` names, resolved: a fleet device with fixed firmware, or a bare profile
/// that runs whichever protocol is chosen.
struct SimulatedTarget: TransportDevice {
    /// "sim:NAME".
    var address: String
    /// The hardware.
    var profile: DeviceProfile
    /// The fleet entry, when the address names one.
    var fleetDevice: SimulatedFleetDevice?
    /// The protocols whose device models it can run.
    var registry: ProtocolRegistry
    /// The `--sim-*` settings of this run.
    var options = SimulatorOptions()

    /// The device used when `--device` is not given.
    static let defaultAddress = "sim:\(DeviceProfile.esp32S3MTU244TwoM.name)"

    static func resolve(
        _ text: String,
        fleet: [SimulatedFleetDevice],
        registry: ProtocolRegistry,
        options: SimulatorOptions
    ) throws(UsageError) -> SimulatedTarget {
        let name = String(text.dropFirst(4))
        if let device = fleet.first(where: { $0.name == name }) {
            return SimulatedTarget(address: text, profile: device.profile, fleetDevice: device, registry: registry, options: options)
        }
        if let profile = DeviceProfile.builtIn.first(where: { $0.name == name }) {
            return SimulatedTarget(address: text, profile: profile, fleetDevice: nil, registry: registry, options: options)
        }
        // A unique prefix names a profile too: sim:nrf52840 is sim:nrf52840-mtu244-2m.
        let candidates = DeviceProfile.builtIn.filter { $0.name.hasPrefix(name + "-") }
        if candidates.count == 1, let profile = candidates.first {
            return SimulatedTarget(address: "sim:\(profile.name)", profile: profile, fleetDevice: nil, registry: registry, options: options)
        }
        if candidates.count > 1 {
            throw UsageError("'\(name)' could be \(candidates.map { "sim:\($0.name)" }.joined(separator: " or ")); give the whole name", command: "devices")
        }
        let known = fleet.map(\.name) + DeviceProfile.builtIn.map(\.name)
        throw UsageError("no simulated device or profile '\(name)' (available: \(known.joined(separator: ", ")))", command: "scan")
    }

    /// The firmware the simulated device runs: the fleet device's, or `chosen` for a bare profile.
    func firmware(chosen: String?) -> (protocolName: String, parameters: ProtocolParameters)? {
        if let fleetDevice { return (fleetDevice.firmwareProtocol, fleetDevice.firmwareParameters) }
        return chosen.map { ($0, [:]) }
    }

    /// What the device advertises when it runs `model`.
    func advertisement(running model: any DeviceModel) -> Advertisement {
        Advertisement(
            name: fleetDevice?.advertisedName ?? profile.name,
            serviceUUIDs: model.services.map(\.uuid),
            manufacturerData: fleetDevice?.manufacturerData ?? [:],
            rssi: fleetDevice?.rssi
        )
    }

    // MARK: - TransportDevice

    var summary: String { "\(address) (\(profile.summary))" }

    var firmwareProtocol: String? { fleetDevice?.firmwareProtocol }

    /// The simulation's (`--seed`): a seeded run repeats exactly, a bootloader's random name
    /// included.
    var randomSeed: UInt64? { options.seed }

    func advertisement(chosenProtocol: String?) throws(OTAError) -> Advertisement? {
        let (_, model) = try deviceModel(chosen: chosenProtocol)
        return advertisement(running: model)
    }

    /// What its protocol reports (MCUmgr's image list), else its Device Information firmware
    /// revision, as the preflight reads them on connecting.
    func runningVersion(chosenProtocol: String?) -> ReportedVersion? {
        if let (_, model) = try? deviceModel(chosen: chosenProtocol), let reported = model.runningVersion { return reported }
        return profile.standardServices.firmwareRevision.map { ReportedVersion(text: $0, source: "Device Information") }
    }

    func check(_ images: [FirmwareImage]) throws(OTAError) {
        for image in images where image.count > profile.slotSize {
            throw OTAError(
                .imageTooLarge,
                "\(image.name) is \(image.count) bytes, larger than the \(profile.slotSize)-byte update slot of \(address)"
            )
        }
    }

    /// Runs `body` in a fresh simulation of the device (its flash restored from `--sim-state`,
    /// and kept there as it acknowledges, decision 0048), then saves the device when `body`
    /// returns or throws.
    func withSession<R>(
        _ request: SessionRequest,
        _ body: @concurrent (any TransportSession) async throws(OTAError) -> R
    ) async throws(OTAError) -> R {
        let simulation = Simulation(seed: options.seed, pace: options.pace)
        let (_, model) = try deviceModel(chosen: request.protocolName)
        let device = try options.makeDevice(profile: profile, model: model, simulation: simulation, imageSize: request.imageSize, address: address)
        // Kept before every answer it gives: a run killed mid-transfer leaves the device where it
        // last acknowledged, and the next run resumes from there.
        let kept = try options.keepAsItGoes(device)
        let result: Result<R, OTAError>
        do throws(OTAError) {
            result = .success(
                try await body(
                    SimulatedSession(connector: SimulatedConnector(device: device, centralMTU: request.offeredMTU), simulation: simulation)
                ))
        } catch {
            result = .failure(error)
        }
        try kept?.end()
        try options.save(device)
        return try result.get()
    }

    /// The device model of the firmware it runs.
    private func deviceModel(chosen: String?) throws(OTAError) -> (ProtocolDescriptor, any DeviceModel) {
        guard let running = firmware(chosen: chosen) else {
            throw OTAError(
                .selectionFailed,
                "\(address) is a bare hardware profile that runs whatever protocol is chosen: pass --protocol NAME, use a package that names one, or pick a device from 'ota scan'"
            )
        }
        let descriptor: ProtocolDescriptor
        do {
            descriptor = try registry.descriptor(named: running.protocolName)
        } catch {
            throw OTAError(.internal, "\(address) runs protocol '\(running.protocolName)', which this build does not link")
        }
        return (descriptor, try descriptor.makeDeviceModel(running.parameters, trusting: options.deviceKey))
    }
}

/// An update or an abort of a simulated device: inside its simulation, in virtual time.
struct SimulatedSession: TransportSession {
    let connector: any Connector
    let simulation: Simulation

    /// A session whose connector follows the device behind `connector` (``FollowingConnector``).
    init(connector: any Connector, simulation: Simulation) {
        self.connector = FollowingConnector(connector)
        self.simulation = simulation
    }

    var clock: any Clock<Duration> { simulation.clock }
    var executor: (any TaskExecutor)? { simulation.executor }
    /// A simulated device restarts in a second of virtual time.
    var restartDelay: Duration { .seconds(1) }

    func run<R: Sendable>(_ body: @escaping @Sendable @concurrent () async throws(OTAError) -> R) async throws(OTAError) -> R {
        let result: Result<R, OTAError>
        do {
            result = try await simulation.run { () async -> Result<R, OTAError> in
                do throws(OTAError) { return .success(try await body()) } catch { return .failure(error) }
            }
        } catch {
            throw OTAError(.internal, "simulation failed: \(error)")
        }
        return try result.get()
    }
}
