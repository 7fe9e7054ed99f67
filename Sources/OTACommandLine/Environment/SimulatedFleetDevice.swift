import Foundation
import OTACore
import OTATransportSimulator

/// A named simulated device with fixed firmware: what `ota scan` finds and `--device sim:NAME`
/// reaches. Its advertisement is what a catalog matches against.
public struct SimulatedFleetDevice: Sendable {
    /// What the device is called and advertises, as its protocol's descriptor declares it.
    public var demo: ProtocolDescriptor.DemoDevice
    /// The hardware, resolved from ``ProtocolDescriptor/DemoDevice/hardwareProfile``.
    public var profile: DeviceProfile
    /// The protocol its firmware speaks.
    public var firmwareProtocol: String

    /// The name in `sim:NAME`.
    public var name: String {
        get { demo.name }
        set { demo.name = newValue }
    }
    /// Parameters of its firmware (UUIDs…).
    public var firmwareParameters: ProtocolParameters {
        get { demo.parameters }
        set { demo.parameters = newValue }
    }
    /// The advertised name.
    public var advertisedName: String {
        get { demo.advertisedName }
        set { demo.advertisedName = newValue }
    }
    /// Manufacturer data it advertises.
    public var manufacturerData: [UInt16: Data] {
        get { demo.manufacturerData }
        set { demo.manufacturerData = newValue }
    }
    /// How strong it is heard, in dBm.
    public var rssi: Int {
        get { demo.rssi }
        set { demo.rssi = newValue }
    }

    /// The fleet device a protocol's descriptor offers as a demonstration, on the simulated
    /// hardware profile it names.
    ///
    /// - Throws: ``OTAError/Code/connectionFailed`` when no built-in profile has that name.
    public init(_ demo: ProtocolDescriptor.DemoDevice, firmwareProtocol: String) throws(OTAError) {
        self.demo = demo
        self.profile = try DeviceProfile.named(demo.hardwareProfile)
        self.firmwareProtocol = firmwareProtocol
    }

    /// The demo devices of every protocol in `registry`, in registration order; a demo device on
    /// a hardware profile this build does not model is left out.
    public static func demoFleet(of registry: ProtocolRegistry) -> [SimulatedFleetDevice] {
        registry.inRegistrationOrder.flatMap { descriptor in
            descriptor.demoDevices.compactMap { try? SimulatedFleetDevice($0, firmwareProtocol: descriptor.name) }
        }
    }
}
