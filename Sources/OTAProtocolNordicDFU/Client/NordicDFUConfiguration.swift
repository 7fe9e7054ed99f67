import OTACore

/// Settings of the Nordic DFU client, read from protocol parameters. Each parameter is declared
/// once below; the declaration gives the stored property its default, checks values, and is what
/// `ota protocols` lists.
public struct NordicDFUConfiguration: ProtocolConfiguration, Hashable {
    /// `prn`: the packet receipt notification interval.
    public static let packetReceiptParameter = ProtocolParameter.integer(
        "prn", summary: "packet receipt notification interval; 0 disables", default: 12, in: 0...65535
    )
    /// `object-delay-ms`: the pause after creating the first data object.
    public static let dataObjectDelayParameter = ProtocolParameter.duration(
        "object-delay-ms", summary: "pause after creating the first data object", default: .milliseconds(400), milliseconds: 0...5000
    )
    /// `object-attempts`: sends of an object before giving up.
    public static let objectAttemptsParameter = ProtocolParameter.integer(
        "object-attempts", summary: "sends of an object whose checksum fails before giving up", default: 3, in: 1...10
    )
    /// Every parameter the Nordic DFU client reads, in the order `ota protocols` lists them.
    public static let parameters = [packetReceiptParameter.spec, dataObjectDelayParameter.spec, objectAttemptsParameter.spec]
    /// `nordic-dfu`, for the message about an undeclared parameter.
    public static var protocolName: String { NordicDFUProtocol.name }

    /// Packet receipt notification interval: the bootloader reports offset and CRC after every
    /// this many packets, and the client waits for each report; 0 disables them (the transport's
    /// back-pressure alone paces the packets). Default 12, as Nordic's clients.
    public var packetReceiptInterval = Self.packetReceiptParameter.defaultValue
    /// Delay after creating the first data object, during which SDK 15/16 bootloaders erase and
    /// may drop packets. Default 400 ms, as Nordic's clients.
    public var dataObjectDelay = Self.dataObjectDelayParameter.defaultValue
    /// Attempts per object when its checksum does not match. Default 3, as Nordic's iOS client.
    public var objectAttempts = Self.objectAttemptsParameter.defaultValue

    /// The defaults.
    public init() {}

    /// Reads `prn`, `object-delay-ms` and `object-attempts`.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a value out of range.
    public init(reading reader: ProtocolParameterReader) throws(OTAError) {
        packetReceiptInterval = try reader.value(Self.packetReceiptParameter)
        dataObjectDelay = try reader.value(Self.dataObjectDelayParameter)
        objectAttempts = try reader.value(Self.objectAttemptsParameter)
    }
}
