import Foundation
import OTACore
import OTATransportSimulator
import Synchronization

/// A campaign's simulated devices (`sim:PROFILE/N`), all in one simulation behind one simulated
/// adapter, each device's flash (and the state its model keeps outside the flash) kept in a
/// directory so that the campaign can be stopped, even killed, and run again.
///
/// A device is read back when an attempt on it is about to start, and kept as it goes, as a
/// real device keeps what it has acknowledged (decision 0041): before each answer it gives the
/// central, what changed is appended to its journal (``SimulatedDeviceFiles/keep(_:)``), and the
/// data bytes it received are counted in place; when the attempt ends, before the campaign
/// records the outcome, the journal is folded into its files. A process killed during an attempt
/// leaves the device as its last answer left it, so the gateway that takes it over (several
/// `ota campaign run` on one PostgreSQL campaign share the directory) resumes from the device's
/// offset, through the protocol's own resume, as it would with a real device.
final class SimulatedCampaignFleet: CampaignFleet {
    let simulation: Simulation
    let adapter: SimulatedAdapter
    private let devices: [String: SimulatedDevice]
    private let image: FirmwareImage
    private let client: any UpdateProtocol
    private let directory: URL
    private let limit: Int
    /// The devices in an attempt, kept as they go.
    private let kept = Mutex<[String: KeptDevice]>([:])

    /// The hardware profile of `--sim-fleet` devices unless `--sim-profile` names another.
    static let defaultProfile = "nrf52840-mtu244-2m"

    /// "sim:PROFILE/N", N from 1.
    static func addresses(profile: DeviceProfile, count: Int) -> [String] {
        (1...count).map { "sim:\(profile.name)/" + String(format: "%04d", $0) }
    }

    /// The profile of a campaign's simulated address, or nil for another address.
    static func profile(of address: String) throws(OTAError) -> DeviceProfile? {
        guard address.hasPrefix("sim:"), let slash = address.lastIndex(of: "/") else { return nil }
        let name = String(address[address.index(address.startIndex, offsetBy: 4)..<slash])
        guard Int(address[address.index(after: slash)...]) != nil else { return nil }
        return try DeviceProfile.named(name)
    }

    init(
        addresses: [String], descriptor: ProtocolDescriptor, image: FirmwareImage, adapterLimit: Int, seed: UInt64, directory: URL
    ) throws(OTAError) {
        simulation = Simulation(seed: seed)
        adapter = SimulatedAdapter(name: "sim-adapter", connectionLimit: adapterLimit)
        limit = adapterLimit
        self.image = image
        self.directory = directory
        client = try descriptor.makeClient(ProtocolParameters())
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw OTAError(.storage, "\(directory.path): cannot keep the simulated devices there (\(error.localizedDescription))")
        }
        var devices: [String: SimulatedDevice] = [:]
        for address in addresses {
            guard let profile = try Self.profile(of: address), let number = address.split(separator: "/").last.flatMap({ Int($0) }) else {
                throw OTAError(.invalidParameter, "\(address) is not a simulated campaign device (sim:PROFILE/N)")
            }
            let model = try descriptor.makeDeviceModel(ProtocolParameters())
            // Its air address by its number, whichever devices the campaign selected.
            let index = number - 1
            let device = SimulatedDevice(
                profile: profile, model: model, simulation: simulation, address: String(format: "C0:DE:00:00:%02X:%02X", index >> 8, index & 0xFF))
            // The level it was selected with (on a profile with a Battery service).
            device.batteryLevel = SimulatedCampaignIdentity(address: address).battery
            devices[address] = device
        }
        self.devices = devices
    }

    var adapters: [FleetAdapter] { [FleetAdapter(name: "sim-adapter", connectionLimit: limit)] }

    func device(_ address: String) throws(OTAError) -> FleetDevice {
        guard let device = devices[address] else { throw OTAError(.invalidParameter, "\(address) is not in this campaign") }
        let identity = SimulatedCampaignIdentity(address: address)
        if identity.charging {
            // On a charger since the run began (a device deferred for its battery may pass later).
            device.batteryLevel = identity.battery(after: simulation.clock.now.offset)
        }
        // As it last answered a central, whichever gateway that was.
        let files = files(address)
        try files.restore(device)
        let keeping = try files.keepAsItGoes(device)
        kept.withLock { $0[address] = keeping }
        return FleetDevice(
            id: address, image: image, updateProtocol: client, connectors: [("sim-adapter", SimulatedConnector(device: device, adapter: adapter))])
    }

    func attemptEnded(_ address: String) throws(OTAError) {
        guard let device = devices[address] else { return }
        device.persistence = nil
        // The device could not be kept as it went: a kill would have lost what it acknowledged.
        try kept.withLock { $0.removeValue(forKey: address) }?.end()
        try files(address).save(device)
    }

    /// `PROFILE-N.flash`, `.state`, `.journal` and `.received` in the directory.
    private func files(_ address: String) -> SimulatedDeviceFiles {
        let name = address.replacingOccurrences(of: "sim:", with: "").replacingOccurrences(of: "/", with: "-")
        return SimulatedDeviceFiles(
            flash: directory.appendingPathComponent(name + ".flash"), state: directory.appendingPathComponent(name + ".state"), code: .storage)
    }
}
