import Foundation
import OTACore
import OTATransportSimulator

/// The device `--device` names, resolved: a fleet device with fixed firmware, or a bare profile
/// that runs whichever protocol is chosen.
struct SimulatedTarget: Sendable {
    /// "sim:NAME".
    var address: String
    /// The hardware.
    var profile: DeviceProfile
    /// The fleet entry, when the address names one.
    var fleetDevice: SimulatedFleetDevice?

    /// The device used when `--device` is not given.
    static let defaultAddress = "sim:\(DeviceProfile.esp32S3MTU244TwoM.name)"

    static func resolve(_ text: String, in environment: ToolEnvironment, command: String) throws(UsageError) -> SimulatedTarget {
        guard text.hasPrefix("sim:") else {
            throw UsageError(
                "device '\(text)' needs a Bluetooth transport, and this build has only the simulator; use sim:NAME (see 'ota scan' and 'ota devices')",
                command: command
            )
        }
        let name = String(text.dropFirst(4))
        if let device = environment.fleet.first(where: { $0.name == name }) {
            return SimulatedTarget(address: text, profile: device.profile, fleetDevice: device)
        }
        if let profile = DeviceProfile.builtIn.first(where: { $0.name == name }) {
            return SimulatedTarget(address: text, profile: profile, fleetDevice: nil)
        }
        // A unique prefix names a profile too: sim:nrf52840 is sim:nrf52840-mtu244-2m.
        let candidates = DeviceProfile.builtIn.filter { $0.name.hasPrefix(name + "-") }
        if candidates.count == 1, let profile = candidates.first {
            return SimulatedTarget(address: "sim:\(profile.name)", profile: profile, fleetDevice: nil)
        }
        if candidates.count > 1 {
            throw UsageError("'\(name)' could be \(candidates.map { "sim:\($0.name)" }.joined(separator: " or ")); give the whole name", command: "devices")
        }
        let known = environment.fleet.map(\.name) + DeviceProfile.builtIn.map(\.name)
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
}
