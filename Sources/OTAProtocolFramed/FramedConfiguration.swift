import OTACore

/// The framed protocol's settings, read from protocol parameters.
public struct FramedConfiguration: Sendable, Hashable {
    /// The GATT layout.
    public var profile = FramedGATTProfile()
    /// Chunks per ACK the app asks for; the device may grant fewer. Default 16.
    public var batch = 16
    /// Batches in flight (at least 2). Default 3.
    public var windowBatches = 3
    /// Silence with data in flight before rewinding to the last ACK. Default 2 s.
    public var ackTimeout: Duration = .seconds(2)
    /// The image version in the session identity. Default 0.
    public var imageVersion: UInt32 = 0

    /// The defaults.
    public init() {}

    static let parameterNames = ["service-uuid", "data-uuid", "control-uuid", "status-uuid", "batch", "window", "ack-timeout-ms", "image-version"]

    /// Reads the parameters `service-uuid`, `data-uuid`, `control-uuid`, `status-uuid`, `batch`
    /// (1…1024), `window` (2…64 batches), `ack-timeout-ms` (50…60000) and `image-version`.
    public init(parameters: ProtocolParameters) throws(OTAError) {
        try parameters.validate(known: Self.parameterNames, protocolName: FramedProtocol.name)
        profile = FramedGATTProfile(
            service: try parameters.uuid("service-uuid", default: FramedGATTProfile.defaultService),
            dataCharacteristic: try parameters.uuid("data-uuid", default: FramedGATTProfile.defaultData),
            controlCharacteristic: try parameters.uuid("control-uuid", default: FramedGATTProfile.defaultControl),
            statusCharacteristic: try parameters.uuid("status-uuid", default: FramedGATTProfile.defaultStatus)
        )
        batch = try parameters.integer("batch", default: 16, in: 1...1024)
        windowBatches = try parameters.integer("window", default: 3, in: 2...64)
        ackTimeout = .milliseconds(try parameters.integer("ack-timeout-ms", default: 2000, in: 50...60_000))
        imageVersion = UInt32(try parameters.integer("image-version", default: 0, in: 0...Int(UInt32.max)))
    }
}
