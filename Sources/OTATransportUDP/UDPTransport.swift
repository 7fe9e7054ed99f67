import Foundation
import OTACore
import Synchronization

/// One packet per datagram over a connected UDP socket, shown to a protocol as one
/// characteristic that it writes without response and that notifies: what the protocol writes
/// is joined into packets (``PacketAssembler``) and each sent as one datagram; each datagram
/// received is one notification. Zephyr's SMP UDP transport works this way.
///
/// UDP has no link to lose: the transport is "disconnected" only when it is closed, or when the
/// system reports that nothing listens at the address (ICMP port unreachable). A device that
/// stops answering shows as the protocol's timeout.
public final class UDPTransport: Transport {
    private struct State {
        var assembler: PacketAssembler
        var subscriber: AsyncStream<Data>.Continuation?
        /// Which subscription ``subscriber`` is, so that an older one's end does not drop a newer one.
        var subscription = 0
        var disconnection: AsyncStream<DisconnectReason>.Continuation?
        var lost: DisconnectReason?
        var datagramsSent = 0
        var datagramsReceived = 0
    }

    /// The one characteristic, written without response and notifying.
    public let characteristic: CharacteristicID
    /// What the link carries per write: ``UDPTransportProvider/maximumWriteLength``.
    public let link: LinkParameters
    /// Where it sends.
    public let address: UDPAddress
    public let disconnections: AsyncStream<DisconnectReason>
    private let socket: UDPSocket
    private let state: Mutex<State>

    init(socket: UDPSocket, address: UDPAddress, characteristic: CharacteristicID, maximumWrite: Int, packetLength: @escaping PacketAssembler.PacketLength) {
        self.socket = socket
        self.address = address
        self.characteristic = characteristic
        link = LinkParameters(
            attMTU: maximumWrite + 3, maximumWriteWithoutResponse: maximumWrite, maximumWriteWithResponse: maximumWrite,
            summary: "UDP to \(address.host):\(address.port), one packet per datagram")
        let (disconnections, continuation) = AsyncStream.makeStream(of: DisconnectReason.self)
        self.disconnections = disconnections
        state = Mutex(State(assembler: PacketAssembler(packetLength: packetLength), disconnection: continuation))
        socket.startReceiving(
            { [weak self] datagram, _ in self?.received(datagram) },
            ended: { [weak self] reason in self?.lose(DisconnectReason(reason.map { "udp: \($0)" } ?? "closed by the app", isLocal: reason == nil)) }
        )
    }

    /// Datagrams sent and received so far.
    public var datagrams: (sent: Int, received: Int) { state.withLock { ($0.datagramsSent, $0.datagramsReceived) } }

    public var characteristics: [CharacteristicID: CharacteristicProperties] { [characteristic: [.writeWithoutResponse, .notify]] }

    private func received(_ datagram: Data) {
        let subscriber = state.withLock { state in
            state.datagramsReceived += 1
            return state.subscriber
        }
        subscriber?.yield(datagram)
    }

    private func lose(_ reason: DisconnectReason) {
        let (subscriber, disconnection) = state.withLock { state -> (AsyncStream<Data>.Continuation?, AsyncStream<DisconnectReason>.Continuation?) in
            guard state.lost == nil else { return (nil, nil) }
            state.lost = reason
            defer {
                state.subscriber = nil
                state.disconnection = nil
            }
            return (state.subscriber, state.disconnection)
        }
        subscriber?.finish()
        disconnection?.yield(reason)
        disconnection?.finish()
    }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        try requireCharacteristic(characteristic, allowing: kind == .withoutResponse ? .writeWithoutResponse : .write)
        guard value.count <= link.maximumWriteWithoutResponse else {
            throw TransportError(
                .valueTooLong(length: value.count, maximum: link.maximumWriteWithoutResponse),
                "a write of \(value.count) bytes is longer than the \(link.maximumWriteWithoutResponse) bytes one write carries")
        }
        let result: Result<[Data], TransportError> = state.withLock { state in
            if let lost = state.lost { return .failure(.disconnected(lost)) }
            let packets = state.assembler.append(value)
            state.datagramsSent += packets.count
            return .success(packets)
        }
        for packet in try result.get() {
            if let problem = socket.send(packet) {
                throw TransportError(.other, "cannot send a \(packet.count)-byte datagram to \(address): \(problem)")
            }
        }
    }

    public func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        throw TransportError(.notPermitted, "\(address) carries packets only; nothing can be read")
    }

    public func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        try requireCharacteristic(characteristic, allowing: .notify)
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
        let subscribed: Result<Int, TransportError> = state.withLock { state in
            if let lost = state.lost { return .failure(.disconnected(lost)) }
            state.subscriber?.finish()
            state.subscriber = continuation
            state.subscription += 1
            return .success(state.subscription)
        }
        let subscription = try subscribed.get()
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                if state.subscription == subscription { state.subscriber = nil }
            }
        }
        return stream
    }

    public func disconnect() async {
        socket.close()
        lose(.closedByApp)
    }
}

/// Opens a ``UDPTransport`` to one address.
public struct UDPConnector: Connector {
    /// Where.
    public var address: UDPAddress
    /// The characteristic the transport shows.
    public var characteristic: CharacteristicID
    /// Bytes per write.
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
        return UDPTransport(socket: socket, address: address, characteristic: characteristic, maximumWrite: maximumWrite, packetLength: packetLength)
    }
}
