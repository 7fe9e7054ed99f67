import Foundation
import OTACore
import Testing

@testable import OTATransportSimulator

/// A simulated world (its simulation, devices, links and flash) goes when its holders let it go,
/// even when its last run ended with timers still set.
@Suite struct WorldLifetimeTests {
    /// Holds an object weakly, to ask afterwards whether it went.
    private final class Watch: @unchecked Sendable {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
        var isGone: Bool { object == nil }
    }

    /// Runs a world whose link is dropped with packets still queued, so that its next connection
    /// event's timer is still set when the run ends, and lets it go.
    private static func runAndLetGo(executor: inout Watch?) async throws -> [Watch] {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        let link = try await world.simulation.run {
            let link = try await SimulatedConnector(device: world.device).connectSimulated()
            try await link.write(Data([1]), to: RecordingDevice.control, kind: .withResponse)
            for _ in 0..<4 { try await link.write(Data(repeating: 1, count: 200), to: RecordingDevice.data, kind: .withoutResponse) }
            await link.disconnect()
            return link
        }
        executor = Watch(world.simulation.executor)
        return [Watch(world.simulation), Watch(world.device), Watch(world.device.flash), Watch(link)]
    }

    @Test func aWorldGoesWithTimersStillSet() async throws {
        var executor: Watch?
        let world = try await Self.runAndLetGo(executor: &executor)
        // The run's thread may release its last references just after the run returns.
        for _ in 0..<100 where !(world + [executor!]).allSatisfy(\.isGone) {
            try await Task.sleep(for: .milliseconds(10))
        }
        // Booleans, not the objects: describing a device that outlived its simulation would
        // read its unowned simulation.
        let gone = world.map(\.isGone)
        #expect(gone == [true, true, true, true])
        #expect(executor!.isGone)
    }
}
