import Foundation
import OTACore
import OTATransportBlueZ
import OTATransportSimulator

/// What `--device` names: a simulated device, or a real one reached through BlueZ.
enum DeviceTarget: Sendable {
    /// `sim:NAME`.
    case simulated(SimulatedTarget)
    /// `AA:BB:CC:DD:EE:FF`, through the adapter `--adapter` names (or the first powered one).
    case bluetooth(address: String, adapter: String?)

    static func resolve(_ text: String, adapter: String?, in environment: ToolEnvironment, command: String) throws(UsageError) -> DeviceTarget {
        if BlueZ.isValidAddress(text) { return .bluetooth(address: text.uppercased(), adapter: adapter) }
        guard text.hasPrefix("sim:") else {
            throw UsageError(
                "device '\(text)' is neither a Bluetooth address (AA:BB:CC:DD:EE:FF) nor a simulated device (sim:NAME; see 'ota scan' and 'ota devices')",
                command: command
            )
        }
        return .simulated(try SimulatedTarget.resolve(text, in: environment, command: command))
    }

    /// "sim:bolt-lock" or "00:AA:01:01:00:01".
    var address: String {
        switch self {
        case .simulated(let target): target.address
        case .bluetooth(let address, _): address
        }
    }
}
