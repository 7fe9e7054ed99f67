import OTACore

/// Settings of the Nordic DFU client, read from protocol parameters. Each parameter is declared
/// once below; the declaration gives the stored property its default, checks values, and is what
/// `ota protocols` lists.
public struct NordicDFUConfiguration: ProtocolConfiguration, Hashable {
    /// `prn`: the packet receipt notification interval, or `auto`.
    public static let packetReceiptParameter = ProtocolParameter.text(
        "prn", summary: "packet receipt notification interval: 0...65535 (0 disables), or auto (adapts to the link)", default: "12"
    )
    /// `object-delay-ms`: the pause after creating the first data object.
    public static let dataObjectDelayParameter = ProtocolParameter.duration(
        "object-delay-ms", summary: "pause after creating the first data object", default: .milliseconds(400), milliseconds: 0...5000
    )
    /// `object-attempts`: sends of an object before giving up.
    public static let objectAttemptsParameter = ProtocolParameter.integer(
        "object-attempts", summary: "sends of an object whose checksum fails before giving up", default: 3, in: 1...10
    )
    /// `pipeline`: whether Execute of one object and Create of the next are queued together.
    public static let pipelineParameter = ProtocolParameter.text(
        "pipeline", summary: "on: queue Execute and the next Create together (see docs/decisions/0024); off: strictly one request at a time",
        default: "off"
    )
    /// Every parameter the Nordic DFU client reads, in the order `ota protocols` lists them.
    public static let parameters = [
        packetReceiptParameter.spec, dataObjectDelayParameter.spec, objectAttemptsParameter.spec, pipelineParameter.spec,
    ]
    /// `nordic-dfu`, for the message about an undeclared parameter.
    public static var protocolName: String { NordicDFUProtocol.name }

    /// The bounds of an adaptive receipt interval (`prn=auto`).
    public static let adaptiveReceiptIntervals = 1...65535

    /// Packet receipt notification interval: the bootloader reports offset and CRC after every
    /// this many packets, and the client waits for each report; 0 disables them (the transport's
    /// back-pressure alone paces the packets). Default 12, as Nordic's clients. With
    /// ``adaptsReceiptInterval`` it is where the adaptation starts (`prn=auto` leaves it 0: the
    /// machine starts at one receipt per object).
    public var packetReceiptInterval = 12
    /// `prn=auto`: the interval adapts to what the link shows, within
    /// ``adaptiveReceiptIntervals`` and never above one receipt per object: halved after an
    /// object arrived wrong or a receipt did not come, doubled after clean objects (see
    /// ``NordicDFUStateMachine``). Default `false`.
    public var adaptsReceiptInterval = false
    /// Delay after creating the first data object, during which SDK 15/16 bootloaders erase and
    /// may drop packets. Default 400 ms, as Nordic's clients.
    public var dataObjectDelay = Self.dataObjectDelayParameter.defaultValue
    /// Attempts per object when its checksum does not match. Default 3, as Nordic's iOS client.
    public var objectAttempts = Self.objectAttemptsParameter.defaultValue
    /// `pipeline=on`: after an object's checksum matched, Execute and the next Create are written
    /// back to back and their answers matched by op code, in whichever order they come (the SDK
    /// queues requests FIFO and re-queues an Execute until flash is idle). Default `false`, the
    /// strict sequence of Nordic's own clients (decision 0024 says why).
    public var pipelinesObjects = false

    /// The defaults.
    public init() {}

    /// Reads `prn`, `object-delay-ms`, `object-attempts` and `pipeline`.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a value out of range.
    public init(reading reader: ProtocolParameterReader) throws(OTAError) {
        let prn = try reader.value(Self.packetReceiptParameter)
        if prn == "auto" {
            adaptsReceiptInterval = true
            packetReceiptInterval = 0
        } else if let problem = ProtocolParameterSpec.integerProblem(prn, in: 0...65535) {
            throw OTAError(.invalidParameter, "parameter 'prn': \(problem), or auto")
        } else {
            packetReceiptInterval = Int(prn) ?? 12
        }
        dataObjectDelay = try reader.value(Self.dataObjectDelayParameter)
        objectAttempts = try reader.value(Self.objectAttemptsParameter)
        switch try reader.value(Self.pipelineParameter) {
        case "on": pipelinesObjects = true
        case "off": pipelinesObjects = false
        case let other: throw OTAError(.invalidParameter, "parameter 'pipeline': '\(MessageText.name(other))' is not on or off")
        }
    }
}
