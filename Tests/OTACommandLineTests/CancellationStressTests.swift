import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTACommandLine

/// Every built-in protocol's updates over the simulated link, cancelled from another thread at
/// random moments of wall time, as a SIGTERM or Ctrl-C to `ota` cancels them. The simulation is
/// paced so that one update takes about 15 ms of wall time: the engine's tasks really suspend (on
/// a full write queue, a response, a notification, a timer) and each cancellation races the
/// link's own work on the simulation's thread. Decision 0079's deadlock came from such a race.
/// Each cancelled update must end within its bound, and the device's next update must complete
/// (its model checks the image it received).
@Suite struct CancellationStressTests {
    @Test(.timeLimit(.minutes(2)), arguments: BuiltInProtocols.registry.inRegistrationOrder.map(\.name))
    func anUpdateCancelledAtAnyMomentEndsAndTheNextCompletes(protocolName: String) async throws {
        let descriptor = try BuiltInProtocols.registry.descriptor(named: protocolName)
        let variant = ProtocolParameters()
        let raw = try Self.image(size: 40_000)
        let image = try descriptor.rawImagePreparation?.prepare(raw) ?? raw
        // The update's length in virtual time, unpaced, sets the pace.
        let length = try await Self.update(image, descriptor: descriptor, variant: variant, simulation: Simulation(seed: 1)).protocolDuration
        let wall = 0.015
        var random = SeededRandom(seed: 37)
        var cancelledMidway = 0
        for round in 0..<30 {
            let simulation = Simulation(seed: UInt64(round + 1), pace: length.seconds / wall)
            let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: try descriptor.makeDeviceModel(variant), simulation: simulation)
            let first = Task { try await Self.update(image, descriptor: descriptor, variant: variant, simulation: simulation, device: device) }
            // From a thread of its own, waited for with a bound (`cancel(_:after:endsWithin:)`).
            let ended = await cancel(first, after: wall * 1.2 * Double(random.next() % 1_000) / 1_000)
            #expect(ended, "\(protocolName), round \(round): the cancelled update never ended")
            guard ended else { return }
            // A device that took the whole image may have left its bootloader; only an update
            // that was stopped is run again.
            guard (try? await first.value) == nil else { continue }
            cancelledMidway += 1
            do {
                _ = try await Self.update(image, descriptor: descriptor, variant: variant, simulation: simulation, device: device)
            } catch {
                Issue.record("\(protocolName), round \(round): the update after the cancelled one failed: \(error)")
            }
        }
        #expect(cancelledMidway > 0, "some cancellation landed inside an update")
    }

    private static func update(
        _ image: FirmwareImage, descriptor: ProtocolDescriptor, variant: ProtocolParameters, simulation: Simulation,
        device: SimulatedDevice? = nil
    ) async throws -> UpdateReport {
        let device = try device ?? SimulatedDevice(profile: .esp32S3MTU244TwoM, model: descriptor.makeDeviceModel(variant), simulation: simulation)
        let client = try descriptor.makeClient(variant)
        let engine = UpdateEngine(clock: simulation.clock)
        return try await simulation.run { try await engine.update(image, using: client, connector: SimulatedConnector(device: device)) }
    }

    private static func image(size: Int) throws -> FirmwareImage {
        var random = SeededRandom(seed: 5)
        return try FirmwareImage(bytes: Data((0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }), name: "stress.bin")
    }
}
