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

    /// The fleet device a protocol's descriptor offers as a demonstration, on the simulated
    /// hardware profile it names.
    ///
    /// - Throws: ``OTAError/Code/connectionFailed`` when no built-in profile has that name.
    public init(_ demo: ProtocolDescriptor.DemoDevice, firmwareProtocol: String) throws(OTAError) {
        self.init(
            name: demo.name, profile: try DeviceProfile.named(demo.hardwareProfile), firmwareProtocol: firmwareProtocol,
            firmwareParameters: demo.parameters, advertisedName: demo.advertisedName, manufacturerData: demo.manufacturerData,
            rssi: demo.rssi
        )
    }

    /// The demo devices of every protocol in `registry`, in registration order; a demo device on
    /// a hardware profile this build does not model is left out.
    public static func demoFleet(of registry: ProtocolRegistry) -> [SimulatedFleetDevice] {
        registry.inRegistrationOrder.flatMap { descriptor in
            descriptor.demoDevices.compactMap { try? SimulatedFleetDevice($0, firmwareProtocol: descriptor.name) }
        }
    }
}
