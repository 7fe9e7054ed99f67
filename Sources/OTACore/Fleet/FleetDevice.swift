/// One device a fleet run updates: what to send it, with which protocol, and through which
/// adapters it can be reached.
public struct FleetDevice: Sendable {
    /// A name for the report (an address, a serial number).
    public var id: String
    /// The image to install (already prepared for the protocol).
    public var image: FirmwareImage
    /// The protocol that installs it.
    public var updateProtocol: any UpdateProtocol
    /// A connector to the device per adapter name that reaches it, in order of preference.
    public var connectors: [(adapter: String, connector: any Connector)]

    /// Creates a fleet device.
    public init(id: String, image: FirmwareImage, updateProtocol: any UpdateProtocol, connectors: [(adapter: String, connector: any Connector)]) {
        self.id = id
        self.image = image
        self.updateProtocol = updateProtocol
        self.connectors = connectors
    }
}
