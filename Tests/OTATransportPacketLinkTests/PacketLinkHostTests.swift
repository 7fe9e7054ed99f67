import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTATransportPacketLink

/// A device model served through a packet-link host, the link replaced by a list of what it sent.
@Suite("Packet-link host", .timeLimit(.minutes(1)))
struct PacketLinkHostTests {
    static let characteristic = PacketLinkTransportTests.characteristic

    /// A started host, its model, what it sent and when it restarted the model.
    struct Bench {
        let model = EchoModel()
        let sent = Packets()
        let restarts: AsyncStream<Void>
        let host: PacketLinkHost

        init() {
            let (restarts, restarted) = AsyncStream.makeStream(of: Void.self)
            self.restarts = restarts
            host = PacketLinkHost(
                model: model, characteristic: PacketLinkHostTests.characteristic, flash: NORFlash(capacity: 4096),
                packetLength: PacketLinkTransportTests.packetLength, send: sent.append, restarting: { restarted.yield() })
            host.start()
        }
    }

    @Test("a packet received is one write to the model; what it notifies in parts leaves as whole packets")
    func echoes() {
        let bench = Bench()
        #expect(bench.model.events == ["connected"])
        bench.host.received(Data([3, 1, 2]))
        #expect(bench.model.events == ["connected", "write 3 bytes"])
        #expect(bench.sent.all == [Data([3, 1, 2])])
    }

    @Test("a reboot restarts the model after the delay, and drops the packet it was part-way through")
    func reboots() async {
        let bench = Bench()
        // Notifies the first half of a 3-byte packet, then asks for a reset.
        bench.host.received(Data([2, EchoModel.halfThenReboot]))
        var restarted = bench.restarts.makeAsyncIterator()
        await restarted.next()
        var connections = bench.model.connections.makeAsyncIterator()
        await connections.next()
        await connections.next()
        #expect(bench.model.events.suffix(3) == ["disconnected", "rebooted", "connected"])
        bench.host.received(Data([3, 4, 5]))
        #expect(bench.sent.all == [Data([3, 4, 5])])
    }

    @Test("after stop, what the model notifies goes nowhere")
    func stops() {
        let bench = Bench()
        bench.host.stop()
        bench.host.received(Data([3, 1, 2]))
        #expect(bench.model.events == ["connected", "write 3 bytes"])
        #expect(bench.sent.all.isEmpty)
    }
}

/// Packets in the order sent.
final class Packets: Sendable {
    private let packets = Mutex<[Data]>([])
    var all: [Data] { packets.withLock { $0 } }
    @Sendable func append(_ packet: Data) { packets.withLock { $0.append(packet) } }
}

/// Notifies back what is written to it, one byte at a time; a write of ``halfThenReboot``
/// notifies the first byte of a 3-byte packet and asks for a reset.
final class EchoModel: DeviceModel {
    static let halfThenReboot: UInt8 = 0xEE
    private let log = Mutex<[String]>([])
    /// One element each time the model is connected.
    let connections: AsyncStream<Void>
    private let connected: AsyncStream<Void>.Continuation

    init() {
        (connections, connected) = AsyncStream.makeStream(of: Void.self)
    }

    var events: [String] { log.withLock { $0 } }
    var services: [GATTServiceDefinition] { [] }

    func connected(_ peripheral: any PeripheralContext) {
        log.withLock { $0.append("connected") }
        connected.yield()
    }

    func disconnected() { log.withLock { $0.append("disconnected") } }
    func rebooted() { log.withLock { $0.append("rebooted") } }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        log.withLock { $0.append("write \(value.count) bytes") }
        if value.last == Self.halfThenReboot {
            peripheral.notify(Data([3]), on: characteristic)
            peripheral.reboot(after: .zero)
        } else {
            for byte in value { peripheral.notify(Data([byte]), on: characteristic) }
        }
        return .success
    }
}
