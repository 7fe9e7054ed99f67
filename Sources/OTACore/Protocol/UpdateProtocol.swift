/// The client side of a firmware update protocol: the plug-in interface.
///
/// A protocol decides *which* bytes go on *which* characteristic and reads the device's answers;
/// the engine (through ``UpdateContext``) owns everything protocols share: the chunk plan from the
/// negotiated MTU and ``dataWrites``, back-pressure, timeouts, device progress, reconnecting, and
/// state events.
///
/// Keep the wire logic in value types (codecs and a state machine with one method per input,
/// returning an `Action` whose failure case is `.fail(OTAError)`) that can be tested without a
/// transport, and make ``run(_:context:)`` a thin driver over them.
public protocol UpdateProtocol: Sendable {
    /// The characteristics the device must expose, checked by the engine before ``run(_:context:)``.
    var requirements: [CharacteristicRequirement] { get }

    /// How image data writes are shaped. The engine builds the one ``ChunkPlan`` of each
    /// connection from it (``UpdateContext/chunkPlan``). Default: ``DataWriteShape/init(headerLength:alignment:kind:)``
    /// with no header, no alignment, writes without response.
    var dataWrites: DataWriteShape { get }

    /// Sends `image` to the device.
    ///
    /// - Returns: ``UpdateOutcome/accepted`` once the device has accepted the image, or
    ///   ``UpdateOutcome/reconnect(reason:after:)`` when the device is switching (into its
    ///   bootloader, to the next part) and the engine should reconnect and run again.
    /// - Throws: ``OTAError`` naming the cause; device status codes are decoded with their meaning.
    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome

    /// Refuses, before anything connects, an image this protocol cannot send (Nordic DFU: one
    /// without its init packet). Default: every non-empty image is fine.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` with the reason.
    func check(_ image: FirmwareImage) throws(OTAError)
}

extension UpdateProtocol {
    /// Every image is fine.
    public func check(_ image: FirmwareImage) throws(OTAError) {}

    /// No header, no alignment, writes without response.
    public var dataWrites: DataWriteShape { DataWriteShape() }
}

/// How a protocol shapes its image data writes: what the engine needs to cut the image into
/// chunks for the negotiated link.
public struct DataWriteShape: Sendable, Hashable {
    /// Bytes the protocol adds to each data write (a chunk header); the payload per write is the
    /// negotiated write length less this.
    public var headerLength: Int
    /// Payload sizes are rounded down to a multiple of this (Nordic DFU: 4, for word-aligned flash
    /// writes).
    public var alignment: Int
    /// How data is written: without response (through the link's back-pressure) or with response
    /// (each write waits for the device's ATT acknowledgement). It also picks which negotiated
    /// maximum write length the chunks derive from.
    public var kind: WriteKind

    /// Creates a shape.
    public init(headerLength: Int = 0, alignment: Int = 1, kind: WriteKind = .withoutResponse) {
        self.headerLength = headerLength
        self.alignment = alignment
        self.kind = kind
    }
}

/// What a run ends with when it does not throw.
public enum UpdateOutcome: Sendable, Hashable {
    /// The device accepted the image.
    case accepted
    /// The device is switching (buttonless → bootloader, next part of a multi-part image): the
    /// engine disconnects, waits `after`, reconnects and runs again: through the same connector,
    /// or, when the device comes back elsewhere, to the one device `expecting` accepts
    /// (``Connector/reappeared(matching:within:)``), never another in range.
    /// It does not count as a resume attempt or a failure; the engine gives up after
    /// ``ResumePolicy/maximumReconnectRequests`` requests in a row without device progress.
    case reconnect(reason: String, after: Duration, expecting: ReappearanceRule? = nil)
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
