import Foundation
import OTACore
import OTATransportSimulator

/// A campaign's simulated devices (`sim:PROFILE/N`), all in one simulation behind one simulated
/// adapter, each device's flash (and the state its model keeps outside the flash) kept in a
/// directory so that the campaign can be stopped, even killed, and run again.
///
/// A device is saved when an attempt on it ends, before the campaign records the outcome, and
/// read back when an attempt on it is about to start: a process killed during an attempt leaves
/// the device as it was before that attempt, and gateways that share the directory (several
/// `ota campaign run` on one PostgreSQL campaign) see one another's devices as their last ended
/// attempt left them.
final class SimulatedCampaignFleet: CampaignFleet {
    let simulation: Simulation
    let adapter: SimulatedAdapter
    private let devices: [String: SimulatedDevice]
    private let image: FirmwareImage
    private let client: any UpdateProtocol
    private let directory: URL
    private let limit: Int

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
        for (index, address) in addresses.enumerated() {
            guard let profile = try Self.profile(of: address) else {
                throw OTAError(.invalidParameter, "\(address) is not a simulated campaign device (sim:PROFILE/N)")
            }
            let model = try descriptor.makeDeviceModel(ProtocolParameters())
            let device = SimulatedDevice(
                profile: profile, model: model, simulation: simulation, address: String(format: "C0:DE:00:00:%02X:%02X", index >> 8, index & 0xFF))
            devices[address] = device
        }
        self.devices = devices
    }

    var adapters: [FleetAdapter] { [FleetAdapter(name: "sim-adapter", connectionLimit: limit)] }

    func device(_ address: String) throws(OTAError) -> FleetDevice {
        guard let device = devices[address] else { throw OTAError(.invalidParameter, "\(address) is not in this campaign") }
        // As the last attempt that ended left it, whichever gateway made that attempt.
        try files(address).restore(device)
        return FleetDevice(
            id: address, image: image, updateProtocol: client, connectors: [("sim-adapter", SimulatedConnector(device: device, adapter: adapter))])
    }

    func attemptEnded(_ address: String) throws(OTAError) {
        guard let device = devices[address] else { return }
        try files(address).save(device)
    }

    /// `PROFILE-N.flash` and `PROFILE-N.state` in the directory.
    private func files(_ address: String) -> SimulatedDeviceFiles {
        let name = address.replacingOccurrences(of: "sim:", with: "").replacingOccurrences(of: "/", with: "-")
        return SimulatedDeviceFiles(
            flash: directory.appendingPathComponent(name + ".flash"), state: directory.appendingPathComponent(name + ".state"), code: .storage)
    }
}
