/// The client side of a firmware update protocol: the plug-in interface.
///
/// A protocol decides *which* bytes go on *which* characteristic and reads the device's answers;
/// the engine (through ``UpdateContext``) owns everything protocols share: chunk sizes from the
/// negotiated MTU, back-pressure, timeouts, progress and state events.
///
/// Keep the wire logic in value types (codecs and a state machine with one method per input)
/// that can be tested without a transport, and make ``run(_:context:)`` a thin driver over them.
public protocol UpdateProtocol: Sendable {
    /// The characteristics the device must expose, checked by the engine before ``run(_:context:)``.
    var requirements: [CharacteristicRequirement] { get }

    /// Bytes the protocol adds to each data write (a chunk header); the payload per write is the
    /// negotiated write length less this. Default 0.
    var chunkHeaderLength: Int { get }

    /// Payload sizes are rounded down to a multiple of this (Nordic DFU: 4, for word-aligned flash
    /// writes). Default 1.
    var chunkAlignment: Int { get }

    /// Sends `image` to the device and returns once the device has accepted it.
    ///
    /// - Throws: ``OTAError`` naming the cause; device status codes are decoded with their meaning.
    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError)
}

extension UpdateProtocol {
    public var chunkHeaderLength: Int { 0 }
    public var chunkAlignment: Int { 1 }
}

/// A characteristic a protocol needs, with the property it uses and a role name for messages.
public struct CharacteristicRequirement: Sendable, Hashable {
    /// The characteristic.
    public var id: CharacteristicID
    /// The property the protocol relies on (for example ``CharacteristicProperties/notify``).
    public var properties: CharacteristicProperties
    /// What the protocol calls it ("OTA Control").
    public var role: String

    /// Creates a requirement.
    public init(_ role: String, _ id: CharacteristicID, properties: CharacteristicProperties) {
        self.role = role
        self.id = id
        self.properties = properties
    }
}
