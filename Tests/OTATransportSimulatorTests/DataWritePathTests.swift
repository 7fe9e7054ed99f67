import Foundation
import OTACore
import OTATransportSimulator
import Synchronization
import Testing

/// A data write with no link fault set takes a shorter path through the device (one lock, no
/// fault lookups): it must count, drain and deliver exactly as the fault path does when no fault
/// fires.
@Suite struct DataWritePathTests {
    private struct Run: Equatable {
        var received: Data
        var writesArrived: Int
        var bytesReceived: Int
        var battery: Int?
        var delivered: Int
        var finished: Duration
        var journal: [Int]
    }

    /// Sends `count` writes of varied lengths and a write with response behind them.
    private static func run(faults: LinkFaults) async throws -> Run {
        var profile = DeviceProfile.esp32S3MTU244TwoM
        profile.standardServices.batteryDrainPer100kB = 10  // so that the drain shows in whole percent
        let world = SimulatorWorld(profile: profile)
        world.device.faults = faults
        let journal = JournalTap()
        world.device.persistence = SimulatedDevice.Persistence(replying: {}, received: { journal.append($0) })
        let (delivered, finished) = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            for index in 0..<400 {
                let value = Data((0..<(1 + index % 244)).map { UInt8(truncatingIfNeeded: $0 &+ index) })
                try await connection.write(value, to: RecordingDevice.data, kind: .withoutResponse)
            }
            try await connection.write(Data([1]), to: RecordingDevice.control, kind: .withResponse)
            return (connection.stats.dataBytesDelivered, world.simulation.now)
        }
        return Run(
            received: world.model.received, writesArrived: world.device.dataWritesArrived,
            bytesReceived: world.device.dataBytesReceived, battery: world.device.batteryLevel, delivered: delivered,
            finished: finished, journal: journal.values)
    }

    @Test func theUnfaultedPathCountsAsTheFaultPathDoes() async throws {
        let plain = try await Self.run(faults: LinkFaults())
        // A fault that never fires sends every write through the fault path.
        var armed = LinkFaults()
        armed.dropWrites = [1_000_000]
        armed.disconnectAtBytes = [1 << 40]
        let faulted = try await Self.run(faults: armed)
        #expect(plain.writesArrived == 400)
        #expect(plain.bytesReceived == plain.received.count && plain.delivered == plain.received.count)
        #expect(plain.journal.count == 400 && plain.journal.last == plain.bytesReceived)
        #expect(plain.battery == Int((91 - 10 * Double(plain.bytesReceived) / 100_000).rounded(.down)))
        #expect(plain == faulted)
    }

    /// Faults set after some writes went by, and cleared again, index the writes the same way.
    @Test func faultsSetMidStreamStillIndexEveryWrite() async throws {
        let world = SimulatorWorld(profile: .esp32MTU23)
        let received = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            for index in 0..<30 {
                if index == 10 {
                    var faults = LinkFaults()
                    faults.dropWrites = [12, 13]
                    world.device.faults = faults
                }
                if index == 20 { world.device.faults = LinkFaults() }
                try await connection.write(Data([UInt8(index)]), to: RecordingDevice.data, kind: .withoutResponse)
                // Each write reaches the device before the next one changes the faults.
                try await connection.write(Data([0]), to: RecordingDevice.control, kind: .withResponse)
            }
            return world.model.received
        }
        #expect(received == Data((0..<30).filter { $0 != 12 && $0 != 13 }.map { UInt8($0) }))
        #expect(world.device.dataWritesArrived == 30)
    }
}

/// Collects what the device's persistence is told about received bytes.
private final class JournalTap: Sendable {
    private let storage = Mutex<[Int]>([])
    var values: [Int] { storage.withLock { $0 } }
    func append(_ value: Int) { storage.withLock { $0.append(value) } }
}
