import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Synchronization
import Testing

@testable import OTAProtocolEspressif

/// The device's link, except that one write with response is never acknowledged: it waits on the
/// simulation's clock until cancelled, as a write to a hung firmware does.
private final class UnacknowledgedWriteTransport: Transport {
    private let base: any Transport
    private let clock: any Clock<Duration>
    private let hanging: Int
    private let withResponseWrites = Mutex(0)

    init(_ base: any Transport, clock: any Clock<Duration>, hanging: Int) {
        self.base = base
        self.clock = clock
        self.hanging = hanging
    }

    var link: LinkParameters { base.link }
    var characteristics: [CharacteristicID: CharacteristicProperties] { base.characteristics }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        if kind == .withResponse {
            let index = withResponseWrites.withLock {
                $0 += 1
                return $0 - 1
            }
            if index == hanging {
                try? await clock.sleep(for: .seconds(3600))
                throw TransportError(.other, "write abandoned")
            }
        }
        try await base.write(value, to: characteristic, kind: kind)
    }

    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data { try await base.read(characteristic) }

    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        try await base.notifications(from: characteristic)
    }

    var disconnections: AsyncStream<DisconnectReason> { base.disconnections }

    func disconnect() async { await base.disconnect() }
}

private struct UnacknowledgedWriteConnector: Connector {
    let base: SimulatedConnector
    let clock: any Clock<Duration>
    let hanging: Int

    var deviceDescription: String { base.deviceDescription }

    func connect() async throws(TransportError) -> any Transport {
        UnacknowledgedWriteTransport(try await base.connect(), clock: clock, hanging: hanging)
    }
}

/// Every esp-ble-ota packet is a write with response. One the device never acknowledges ends the
/// update: its deadline kept by the stall watchdog's timer when the response timeout is at least
/// the stall period (decision 0058), by a time limit of its own when it is shorter, and the stall
/// reported when that comes first. In virtual time, so the time of the failure is exact: it moves
/// with the response timeout second for second, the write's deadline, not the watchdog's next
/// check.
@Suite struct EspressifUnacknowledgedPacketTests {
    private static func run(response: Int, stall: Int, hanging: Int = 41) async throws -> (error: OTAError, time: Duration) {
        var harness = EspressifHarness(profile: .esp32S3MTU244TwoM)
        harness.base.configuration.responseTimeout = .seconds(response)
        harness.base.configuration.stallTimeout = .seconds(stall)
        harness.base.configuration.resume.maximumAttempts = 0
        // START is write 0; the packets follow: write 41 is a packet of sector 2.
        let connector = UnacknowledgedWriteConnector(
            base: SimulatedConnector(device: harness.device), clock: harness.base.simulation.clock, hanging: hanging)
        let outcome = try await harness.base.update(
            try EspressifHarness.image(size: 30_000), using: EspressifClient(configuration: .init(imageCheck: .none)), connector: connector)
        return (try outcome.failure(), outcome.virtualTime)
    }

    @Test(arguments: [(response: 3, stall: 3), (2, 3)])
    func anUnacknowledgedPacketTimesOutAtItsDeadline(response: Int, stall: Int) async throws {
        let (error, time) = try await Self.run(response: response, stall: stall)
        #expect(error.code == .timeout)
        #expect(error.message.contains("timed out after \(response).0 s waiting for the device to acknowledge data at byte "))
        let (later, laterTime) = try await Self.run(response: response + 1, stall: stall + 1)
        #expect(later.code == .timeout)
        #expect(laterTime - time == .seconds(1))
    }

    /// A command write (START, outside any watchdog) is bounded by the run's one response timer
    /// (decision 0063): the update fails with the write's own timeout, at its deadline.
    @Test(arguments: [(response: 3, stall: 3), (2, 5), (7, 2)])
    func anUnacknowledgedCommandTimesOutAtItsDeadline(response: Int, stall: Int) async throws {
        let (error, time) = try await Self.run(response: response, stall: stall, hanging: 0)
        #expect(error.code == .timeout)
        #expect(error.message.contains("timed out after \(response).0 s waiting for the device to acknowledge START"), "\(error.message)")
        let (later, laterTime) = try await Self.run(response: response + 1, stall: stall, hanging: 0)
        #expect(later.code == .timeout)
        #expect(laterTime - time == .seconds(1))
    }

    @Test func aStallPeriodShorterThanTheResponseTimeoutReportsTheStall() async throws {
        let (error, _) = try await Self.run(response: 10, stall: 2)
        #expect(error.code == .stalled)
        #expect(error.message.contains("no data accepted by the link for 2.0 s"))
    }
}
