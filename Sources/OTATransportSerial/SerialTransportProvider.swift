import OTACore
import OTATransportPacketLink

/// Serial lines as a ``TransportProvider``: `serial:PATH[@BAUD]` reaches a device that speaks a
/// protocol on a UART or USB CDC port (MCUmgr: Zephyr's SMP console/UART transport).
public struct SerialTransportProvider: TransportProvider {
    /// The protocol the line carries.
    public var protocolName: String
    /// The characteristic the protocol's client uses.
    public var characteristic: CharacteristicID
    /// The service a device reached this way is taken to advertise (for the catalog).
    public var advertisedService: GATTUUID?
    /// How packets are framed.
    public var framing: SerialFraming

    /// A provider.
    public init(protocolName: String, characteristic: CharacteristicID, advertisedService: GATTUUID? = nil, framing: SerialFraming) {
        self.protocolName = protocolName
        self.characteristic = characteristic
        self.advertisedService = advertisedService
        self.framing = framing
    }

    public var name: String { "serial" }
    public var addressForm: String { "a serial port (serial:/dev/ttyACM0)" }
    public func recognises(_ address: String) -> Bool { address.hasPrefix(SerialAddress.scheme) }

    public func device(at address: String, options: TransportOptions) throws(OTAError) -> any TransportDevice {
        let parsed = try SerialAddress(parsing: address)
        return PacketLinkDevice(
            connector: SerialConnector(address: parsed, characteristic: characteristic, framing: framing), address: parsed.description,
            summary: "\(parsed) (\(protocolName) on a serial line)", protocolName: protocolName, advertisedService: advertisedService)
    }

    public func scanner(options: TransportOptions) -> any DeviceScanner { PacketLinkScanner() }
}
