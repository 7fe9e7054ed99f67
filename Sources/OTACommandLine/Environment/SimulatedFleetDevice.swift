import Foundation
import OTACore
import OTATransportSimulator

/// A named simulated device with fixed firmware: what `ota scan` finds and `--device sim:NAME`
/// reaches. Its advertisement is what a catalog matches against.
public struct SimulatedFleetDevice: Sendable {
    /// The name in `sim:NAME`.
    public var name: String
    /// The hardware.
    public var profile: DeviceProfile
    /// The protocol its firmware speaks.
    public var firmwareProtocol: String
    /// Parameters of that firmware (UUIDs…).
    public var firmwareParameters: ProtocolParameters
    /// The advertised name.
    public var advertisedName: String
    /// Manufacturer data it advertises.
    public var manufacturerData: [UInt16: Data]
    /// How strong it is heard, in dBm.
    public var rssi: Int

    /// Creates a fleet device.
    public init(
        name: String,
        profile: DeviceProfile,
        firmwareProtocol: String,
        firmwareParameters: ProtocolParameters = [:],
        advertisedName: String,
        manufacturerData: [UInt16: Data] = [:],
        rssi: Int
    ) {
        self.name = name
        self.profile = profile
        self.firmwareProtocol = firmwareProtocol
        self.firmwareParameters = firmwareParameters
        self.advertisedName = advertisedName
        self.manufacturerData = manufacturerData
        self.rssi = rssi
    }

    /// The simulated devices `ota` offers.
    public static let standardFleet: [SimulatedFleetDevice] = [
        SimulatedFleetDevice(
            name: "acme-sensor", profile: .esp32S3MTU244TwoM, firmwareProtocol: "generic",
            advertisedName: "ACME-Sensor-01A4", rssi: -52
        ),
        SimulatedFleetDevice(
            name: "bolt-lock", profile: .esp32S3MTU244OneM, firmwareProtocol: "framed",
            advertisedName: "BoltLock 7F21", manufacturerData: [0x02E5: Data([0x42, 0x4C, 0x01])], rssi: -67
        ),
        SimulatedFleetDevice(
            name: "nrf-tracker", profile: .nrf52840, firmwareProtocol: "nordic-dfu",
            advertisedName: "DfuTarg", manufacturerData: [0x0059: Data([0x01])], rssi: -58
        ),
    ]
}
