import Foundation
import OTACore
import Synchronization

/// A protocol's packets over a ``PacketChannel``, shown as one characteristic written without
/// response and notifying: writes are joined into packets (``PacketAssembler``) and each is sent
/// whole; each packet received is one notification. The link is lost only when the channel ends
/// (closed here, or failed); a device that stops answering shows as the protocol's timeout.
package final class PacketLinkTransport: Transport, NotificationPushing {
    private struct State {
        var assembler: PacketAssembler
        var subscriber: NotificationSubscriber?
        /// Which subscription ``subscriber`` is, so that an older one's end does not drop a newer one.
        var subscription = 0
        var disconnection: AsyncStream<DisconnectReason>.Continuation?
        var lost: DisconnectReason?
        var packetsSent = 0
        var packetsReceived = 0
    }

    /// The one characteristic, written without response and notifying.
    package let characteristic: CharacteristicID
    package let link: LinkParameters
    package let disconnections: AsyncStream<DisconnectReason>
    /// Where the packets go, for messages (`serial:/dev/ttyACM0`, `udp:192.0.2.1:1337`).
    private let place: String
    private let channel: any PacketChannel
    private let state: Mutex<State>

    /// A transport on `channel`, which it starts receiving from.
    ///
    /// - Parameters:
    ///   - place: the address, for messages.
    ///   - kind: the channel's kind (`serial`, `udp`), which prefixes the reason it failed.
    ///   - maximumWrite: the longest write; a packet longer than a write is still sent whole.
    ///   - summary: ``LinkParameters/summary``.
    ///   - packetOverhead: ``LinkParameters/packetOverhead``, what the framing adds that the
    ///     device's buffer holds.
    package init(
        channel: any PacketChannel, place: String, kind: String, characteristic: CharacteristicID, maximumWrite: Int,
        packetLength: @escaping PacketAssembler.PacketLength, summary: String, packetOverhead: Int = 0
    ) {
        self.channel = channel
        self.place = place
        self.characteristic = characteristic
        link = LinkParameters(
            attMTU: maximumWrite + 3, maximumWriteWithoutResponse: maximumWrite, maximumWriteWithResponse: maximumWrite, summary: summary,
            packetOverhead: packetOverhead)
        let (disconnections, continuation) = AsyncStream.makeStream(of: DisconnectReason.self)
        self.disconnections = disconnections
        state = Mutex(State(assembler: PacketAssembler(packetLength: packetLength), disconnection: continuation))
        channel.startReceiving(
            { [weak self] packet in self?.received(packet) },
            ended: { [weak self] reason in
                self?.lose(DisconnectReason(reason.map { "\(kind): \($0)" } ?? "closed by the app", isLocal: reason == nil))
            })
    }

    /// Packets sent and received so far.
    package var packets: (sent: Int, received: Int) { state.withLock { ($0.packetsSent, $0.packetsReceived) } }

    package var characteristics: [CharacteristicID: CharacteristicProperties] { [characteristic: [.writeWithoutResponse, .notify]] }

    private func received(_ packet: Data) {
        let subscriber = state.withLock { state in
            state.packetsReceived += 1
            return state.subscriber
        }
        subscriber?.deliver(packet)
    }

    private func lose(_ reason: DisconnectReason) {
        let (subscriber, disconnection) = state.withLock { state -> (NotificationSubscriber?, AsyncStream<DisconnectReason>.Continuation?) in
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

    package func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        try requireCharacteristic(characteristic, allowing: kind == .withoutResponse ? .writeWithoutResponse : .write)
        guard value.count <= link.maximumWriteWithoutResponse else {
            throw TransportError(
                .valueTooLong(length: value.count, maximum: link.maximumWriteWithoutResponse),
                "a write of \(value.count) bytes is longer than the \(link.maximumWriteWithoutResponse) bytes one write carries")
        }
        let result: Result<[Data], TransportError> = state.withLock { state in
            if let lost = state.lost { return .failure(.disconnected(lost)) }
            let packets = state.assembler.append(value)
            state.packetsSent += packets.count
            return .success(packets)
        }
        for packet in try result.get() {
            if let problem = channel.send(packet) { throw TransportError(.other, problem) }
        }
    }

    package func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        throw TransportError(.notPermitted, "\(place) carries packets only; nothing can be read")
    }

    package func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        try await NotificationSubscriber.stream { (subscriber) throws(TransportError) in try subscribe(to: characteristic, subscriber) }
    }

    /// Each packet handed to `receiver` on the channel's receiving side as it arrives (decision
    /// 0066): no stream, no task reading it.
    package func pushNotifications(
        from characteristic: CharacteristicID, to receiver: NotificationReceiver
    ) async throws(TransportError) -> NotificationSubscription {
        NotificationSubscription(cancel: try subscribe(to: characteristic, .push(receiver)))
    }

    /// Makes `subscriber` the one subscription (the one before it, if any, finishes) and returns
    /// what ends it.
    private func subscribe(to characteristic: CharacteristicID, _ subscriber: NotificationSubscriber) throws(TransportError) -> @Sendable () -> Void {
        try requireCharacteristic(characteristic, allowing: .notify)
        let subscribed: Result<(Int, NotificationSubscriber?), TransportError> = state.withLock { state in
            if let lost = state.lost { return .failure(.disconnected(lost)) }
            defer { state.subscriber = subscriber }
            state.subscription += 1
            return .success((state.subscription, state.subscriber))
        }
        let (subscription, previous) = try subscribed.get()
        // Outside the lock: its end takes the lock (below) to see that it is no longer the one.
        previous?.finish()
        return { [weak self] in
            self?.state.withLock { state in
                if state.subscription == subscription { state.subscriber = nil }
            }
        }
    }

    package func disconnect() async {
        await channel.close()
        lose(.closedByApp)
    }
}
