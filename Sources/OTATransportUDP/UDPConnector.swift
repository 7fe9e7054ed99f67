import Foundation
import OTACore
import OTATransportPacketLink

/// Opens one packet per datagram over a connected UDP socket, shown to a protocol as one
/// characteristic that it writes without response and that notifies: what the protocol writes
/// is joined into packets (``PacketAssembler``) and each sent as one datagram; each datagram
/// received is one notification. Zephyr's SMP UDP transport works this way.
///
/// UDP has no link to lose: the transport is "disconnected" only when it is closed, or when the
/// system reports that nothing listens at the address (ICMP port unreachable). A device that
/// stops answering shows as the protocol's timeout.
public struct UDPConnector: Connector {
    /// Where.
    public var address: UDPAddress
    /// The characteristic the transport shows.
    public var characteristic: CharacteristicID
    /// Bytes per write (``UDPTransportProvider/maximumWriteLength``).
    public var maximumWrite: Int
    let packetLength: PacketAssembler.PacketLength

    /// A connector.
    public init(address: UDPAddress, characteristic: CharacteristicID, maximumWrite: Int, packetLength: @escaping PacketAssembler.PacketLength) {
        self.address = address
        self.characteristic = characteristic
        self.maximumWrite = maximumWrite
        self.packetLength = packetLength
    }

    public var deviceDescription: String { address.description }

    /// Resolves the host and opens a connected socket (nothing is sent: UDP has no handshake).
    public func connect() async throws(TransportError) -> any Transport {
        let socket: UDPSocket
        do {
            socket = try UDPSocket.connected(host: address.host, port: address.port)
        } catch {
            throw TransportError(.connectionFailed, error.message)
        }
        return PacketLinkTransport(
            channel: Datagrams(socket: socket, address: address), place: address.description, kind: "udp", characteristic: characteristic,
            maximumWrite: maximumWrite, packetLength: packetLength, summary: "UDP to \(address.host):\(address.port), one packet per datagram")
    }
}

/// Whole packets over a connected socket, one per datagram.
struct Datagrams: PacketChannel {
    let socket: UDPSocket
    let address: UDPAddress

    func send(_ packet: Data) -> String? {
        socket.send(packet).map { "cannot send a \(packet.count)-byte datagram to \(address): \($0)" }
    }

    func startReceiving(_ packet: @escaping @Sendable (Data) -> Void, ended: @escaping @Sendable (String?) -> Void) {
        socket.startReceiving({ datagram, _ in packet(datagram) }, ended: ended)
    }

    func close() async {
        socket.close()
    }
}
