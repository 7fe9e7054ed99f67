import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTATransportPacketLink

/// The packet-link transport over a channel in memory: what it sends, what it delivers, and how
/// it ends, without a descriptor. (A lost packet would leave a wait unanswered: the time limit,
/// here and in the other two suites, turns that into a failure rather than a hang; it measures no
/// speed.)
@Suite("Packet-link transport", .timeLimit(.minutes(1)))
struct PacketLinkTransportTests {
    static let characteristic = CharacteristicID(
        service: GATTUUID("6e400001-b5a3-f393-e0a9-e50e24dc0001")!, characteristic: GATTUUID("6e400002-b5a3-f393-e0a9-e50e24dc0001")!)
    /// A packet is as long as its first byte says.
    static let packetLength: PacketAssembler.PacketLength = { $0.first.map(Int.init) }

    static func transport(_ channel: MemoryChannel, maximumWrite: Int = 8) -> PacketLinkTransport {
        PacketLinkTransport(
            channel: channel, place: "test:here", kind: "test", characteristic: characteristic, maximumWrite: maximumWrite,
            packetLength: packetLength, summary: "in memory")
    }

    @Test("writes are joined into whole packets, each sent once it is whole")
    func joinsWrites() async throws {
        let channel = MemoryChannel()
        let transport = Self.transport(channel)
        try await transport.write(Data([5, 1]), to: Self.characteristic, kind: .withoutResponse)
        #expect(channel.sent.isEmpty)
        try await transport.write(Data([2, 3, 5, 2]), to: Self.characteristic, kind: .withoutResponse)
        #expect(channel.sent == [Data([5, 1, 2, 3, 5])])
        #expect(transport.packets.sent == 1)
        #expect(transport.link.maximumWriteWithoutResponse == 8)
        #expect(transport.characteristics == [Self.characteristic: [.writeWithoutResponse, .notify]])
    }

    @Test("a write longer than the link carries, and one the channel cannot send, are refused")
    func refusesWrites() async {
        let channel = MemoryChannel()
        let transport = Self.transport(channel, maximumWrite: 4)
        let long = await #expect(throws: TransportError.self) {
            try await transport.write(Data([9, 1, 2, 3, 4]), to: Self.characteristic, kind: .withoutResponse)
        }
        #expect(long?.kind == .valueTooLong(length: 5, maximum: 4))
        channel.failure.withLock { $0 = "cannot write to test:here: broken" }
        let broken = await #expect(throws: TransportError.self) {
            try await transport.write(Data([2, 1]), to: Self.characteristic, kind: .withoutResponse)
        }
        #expect(broken?.kind == .other)
        #expect(broken?.message == "cannot write to test:here: broken")
        let read = await #expect(throws: TransportError.self) { try await transport.read(Self.characteristic) }
        #expect(read?.kind == .notPermitted)
    }

    @Test("each packet received is one notification, and an older subscription's end leaves a newer one")
    func notifies() async throws {
        let channel = MemoryChannel()
        let transport = Self.transport(channel)
        let older = try await transport.notifications(from: Self.characteristic)
        // Subscribing again ends the older stream, whose end must not drop the newer subscriber.
        let newer = try await transport.notifications(from: Self.characteristic)
        var olderIterator = older.makeAsyncIterator()
        #expect(await olderIterator.next() == nil)
        channel.deliver(Data([3, 7, 7]))
        var iterator = newer.makeAsyncIterator()
        #expect(await iterator.next() == Data([3, 7, 7]))
        #expect(transport.packets.received == 1)
    }

    @Test("pushed packets reach the receiver in order; a newer subscription finishes an older one, cancelling stops them, a lost link finishes the receiver")
    func pushes() async throws {
        let channel = MemoryChannel()
        let transport = Self.transport(channel)
        let log = Mutex<[String]>([])
        let receiver = { @Sendable (name: String) in
            NotificationReceiver(
                receive: { value in log.withLock { $0.append("\(name) \(value.last ?? 0)") } }, finished: { log.withLock { $0.append("\(name) finished") } })
        }
        let older = try await transport.pushNotifications(from: Self.characteristic, to: receiver("a"))
        channel.deliver(Data([2, 1]))
        channel.deliver(Data([2, 2]))
        let newer = try await transport.pushNotifications(from: Self.characteristic, to: receiver("b"))
        older.cancel()  // replaced already: ends nothing
        channel.deliver(Data([2, 3]))
        newer.cancel()
        channel.deliver(Data([2, 4]))
        let last = try await transport.pushNotifications(from: Self.characteristic, to: receiver("c"))
        channel.end("the port closed")
        last.cancel()
        #expect(log.withLock { $0 } == ["a 1", "a 2", "a finished", "b 3", "c finished"])
        #expect(transport.packets.received == 4)
    }

    @Test("the channel's failure loses the link, named by its kind; writes after it fail as disconnected")
    func losesLink() async throws {
        let channel = MemoryChannel()
        let transport = Self.transport(channel)
        let notifications = try await transport.notifications(from: Self.characteristic)
        channel.end("the port closed")
        var reasons = transport.disconnections.makeAsyncIterator()
        let reason = await reasons.next()
        #expect(reason?.description == "test: the port closed")
        #expect(reason?.isLocal == false)
        var ended = notifications.makeAsyncIterator()
        #expect(await ended.next() == nil)
        let write = await #expect(throws: TransportError.self) {
            try await transport.write(Data([2, 1]), to: Self.characteristic, kind: .withoutResponse)
        }
        #expect(write?.kind == .disconnected(DisconnectReason("test: the port closed")))
        await #expect(throws: TransportError.self) { try await transport.notifications(from: Self.characteristic) }
    }

    @Test("disconnecting closes the channel and reports the app's own close, once")
    func disconnects() async {
        let channel = MemoryChannel()
        let transport = Self.transport(channel)
        await transport.disconnect()
        #expect(channel.closed.withLock { $0 })
        channel.end(nil)
        var reasons = transport.disconnections.makeAsyncIterator()
        #expect(await reasons.next() == .closedByApp)
        #expect(await reasons.next() == nil)
    }
}

/// A channel in memory: records what is sent, delivers what a test gives it.
final class MemoryChannel: PacketChannel {
    private let handlers = Mutex<(packet: @Sendable (Data) -> Void, ended: @Sendable (String?) -> Void)?>(nil)
    private let sentPackets = Mutex<[Data]>([])
    /// What ``send(_:)`` answers.
    let failure = Mutex<String?>(nil)
    let closed = Mutex(false)

    var sent: [Data] { sentPackets.withLock { $0 } }

    func send(_ packet: Data) -> String? {
        if let failure = failure.withLock({ $0 }) { return failure }
        sentPackets.withLock { $0.append(packet) }
        return nil
    }

    func startReceiving(_ packet: @escaping @Sendable (Data) -> Void, ended: @escaping @Sendable (String?) -> Void) {
        handlers.withLock { $0 = (packet, ended) }
    }

    func close() async {
        closed.withLock { $0 = true }
    }

    func deliver(_ packet: Data) { handlers.withLock { $0 }?.packet(packet) }
    func end(_ reason: String?) { handlers.withLock { $0 }?.ended(reason) }
}
