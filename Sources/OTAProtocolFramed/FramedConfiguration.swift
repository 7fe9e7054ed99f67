import OTACore

/// The framed protocol's settings, read from protocol parameters. Each parameter is declared
/// once below; the declaration gives the stored property its default, checks values, and is what
/// `ota protocols` lists.
public struct FramedConfiguration: ProtocolConfiguration, Hashable {
    /// `batch`: chunks per acknowledgement.
    public static let batchParameter = ProtocolParameter.integer(
        "batch", summary: "chunks per acknowledgement the app asks for", default: 16, in: 1...1024
    )
    /// `window`: batches in flight.
    public static let windowParameter = ProtocolParameter.integer(
        "window", summary: "most batches in flight (halves on each loss, grows back by one per clean ACK)", default: 3, in: 2...64
    )
    /// `ack-timeout-ms`: silence before rewinding.
    public static let ackTimeoutParameter = ProtocolParameter.duration(
        "ack-timeout-ms", summary: "silence before resending from the last ACK", default: .seconds(2), milliseconds: 50...60_000
    )
    /// `image-version`: the version in the session identity.
    public static let imageVersionParameter = ProtocolParameter<UInt32>.integer(
        "image-version", summary: "version number in the session identity", default: 0, in: 0...UInt32.max
    )
    /// `version`: the highest protocol version offered at BEGIN.
    public static let versionParameter = ProtocolParameter<UInt8>.integer(
        "version", summary: "highest protocol version offered (2: compact chunks; 1: offset and CRC per chunk)", default: 2, in: 1...2
    )
    /// Every parameter the framed protocol reads, in the order `ota protocols` lists them: its
    /// own, then its GATT profile's.
    public static let parameters =
        [batchParameter.spec, windowParameter.spec, ackTimeoutParameter.spec, imageVersionParameter.spec, versionParameter.spec]
        + FramedGATTProfile.parameters
    /// `framed`, for the message about an undeclared parameter.
    public static var protocolName: String { FramedProtocol.name }

    /// The GATT layout.
    public var profile = FramedGATTProfile()
    /// Chunks per ACK the app asks for; the device may grant fewer. Default 16.
    public var batch = Self.batchParameter.defaultValue
    /// Batches in flight (at least 2). Default 3.
    public var windowBatches = Self.windowParameter.defaultValue
    /// Silence with data in flight before rewinding to the last ACK. Default 2 s.
    public var ackTimeout = Self.ackTimeoutParameter.defaultValue
    /// The image version in the session identity. Default 0.
    public var imageVersion = Self.imageVersionParameter.defaultValue

    /// The highest protocol version BEGIN offers; a version-1 device is then asked again in
    /// version 1. Default 2.
    public var version = Self.versionParameter.defaultValue

    /// The defaults.
    public init() {}

    /// Reads `batch`, `window`, `ack-timeout-ms`, `image-version`, `version` and the profile's UUIDs.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a value out of range.
    public init(reading reader: ProtocolParameterReader) throws(OTAError) {
        profile = try FramedGATTProfile(reading: reader)
        batch = try reader.value(Self.batchParameter)
        windowBatches = try reader.value(Self.windowParameter)
        ackTimeout = try reader.value(Self.ackTimeoutParameter)
        imageVersion = try reader.value(Self.imageVersionParameter)
        version = try reader.value(Self.versionParameter)
    }
}
