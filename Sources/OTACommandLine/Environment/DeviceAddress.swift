import OTACore
import OTATransportSimulator

/// What `--device` names. Only simulated devices exist in this build.
enum DeviceAddress: Sendable, Equatable {
    /// `sim:PROFILE`: a simulated device with a built-in profile.
    case simulated(DeviceProfile)

    /// The device used when `--device` is not given.
    static let defaultAddress = "sim:\(DeviceProfile.esp32S3MTU244TwoM.name)"

    static func parse(_ text: String) throws(UsageError) -> DeviceAddress {
        guard text.hasPrefix("sim:") else {
            throw UsageError(
                "device '\(text)' needs a Bluetooth transport, and this build has only the simulator; use sim:PROFILE (see 'ota devices')",
                command: "update"
            )
        }
        let name = String(text.dropFirst(4))
        do {
            return .simulated(try DeviceProfile.named(name))
        } catch {
            throw UsageError(error.message, command: "devices")
        }
    }
}
