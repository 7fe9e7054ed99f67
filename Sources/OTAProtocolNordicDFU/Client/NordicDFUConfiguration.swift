import OTACore

/// Settings of the Nordic DFU client, read from protocol parameters.
public struct NordicDFUConfiguration: Sendable, Hashable {
    /// Packet receipt notification interval: the bootloader reports offset and CRC after every
    /// this many packets, and the client waits for each report; 0 disables them (the transport's
    /// back-pressure alone paces the packets). Default 12, as Nordic's clients.
    public var packetReceiptInterval = 12
    /// Delay after creating the first data object, during which SDK 15/16 bootloaders erase and
    /// may drop packets. Default 400 ms, as Nordic's clients.
    public var dataObjectDelay: Duration = .milliseconds(400)
    /// Attempts per object when its checksum does not match. Default 3, as Nordic's iOS client.
    public var objectAttempts = 3

    /// The defaults.
    public init() {}

    static let parameterNames = ["prn", "object-delay-ms", "object-attempts"]

    /// Reads `prn` (0…65535), `object-delay-ms` (0…5000) and `object-attempts` (1…10).
    public init(parameters: ProtocolParameters) throws(OTAError) {
        try parameters.validate(known: Self.parameterNames, protocolName: "nordic-dfu")
        packetReceiptInterval = try parameters.integer("prn", default: 12, in: 0...65535)
        dataObjectDelay = .milliseconds(try parameters.integer("object-delay-ms", default: 400, in: 0...5000))
        objectAttempts = try parameters.integer("object-attempts", default: 3, in: 1...10)
    }
}
