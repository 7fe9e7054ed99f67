import OTACore
import OTATransportPacketLink

/// Opens a protocol's packets on a serial line, shown as one characteristic written without
/// response and notifying: writes are joined into packets, each packet is framed and written to
/// the line; what the line carries is decoded into packets, each one notification. Lines that are
/// not packets (a console's log output) are skipped by the framing.
public struct SerialConnector: Connector {
    /// Where.
    public var address: SerialAddress
    /// The characteristic shown.
    public var characteristic: CharacteristicID
    /// Bytes per write (packets longer than a write are still one frame).
    public var maximumWrite: Int
    /// How packets are framed.
    public var framing: SerialFraming

    /// A connector.
    public init(address: SerialAddress, characteristic: CharacteristicID, maximumWrite: Int = 2048, framing: SerialFraming) {
        self.address = address
        self.characteristic = characteristic
        self.maximumWrite = maximumWrite
        self.framing = framing
    }

    public var deviceDescription: String { address.description }

    /// Opens the port (raw mode at the address's rate, when it is a terminal).
    public func connect() async throws(TransportError) -> any Transport {
        let port: SerialPort
        do {
            port = try SerialPort.open(address.path, baud: address.baud)
        } catch {
            throw TransportError(.connectionFailed, error.message)
        }
        return PacketLinkTransport(
            channel: SerialLine(port: port, framing: framing, path: address.path), place: address.description, kind: "serial",
            characteristic: characteristic, maximumWrite: maximumWrite, packetLength: framing.packetLength,
            summary: "serial \(address.path) at \(address.baud) baud", packetOverhead: framing.bufferOverhead)
    }
}
