import Foundation
import OTACore
import OTAProtocolGeneric
import OTATransportSimulator

/// One simulated device running the generic protocol, and a way to update it.
struct GenericHarness {
    let simulation: Simulation
    let model: GenericDeviceModel
    let device: SimulatedDevice
    var configuration = UpdateConfiguration()

    init(profile: DeviceProfile, seed: UInt64 = 1, behavior: GenericDeviceModel.Behavior = .init()) {
        simulation = Simulation(seed: seed)
        model = GenericDeviceModel(behavior: behavior)
        device = SimulatedDevice(profile: profile, model: model, simulation: simulation)
    }

    /// Deterministic pseudo-random image bytes.
    static func image(size: Int, seed: UInt64 = 7) throws -> FirmwareImage {
        var random = SeededRandom(seed: seed)
        var bytes = [UInt8](repeating: 0, count: size)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        return try FirmwareImage(bytes: Data(bytes), name: "test-\(size).bin")
    }

    struct Outcome: Sendable {
        var result: Result<UpdateReport, OTAError>
        var events: [UpdateEvent]
        var virtualTime: Duration
    }

    /// Runs one update with `connector` (the device's own by default) and collects events.
    func update(_ image: FirmwareImage, connector: (any Connector)? = nil) async throws -> Outcome {
        let engine = UpdateEngine(configuration: configuration, clock: simulation.clock)
        let connector = connector ?? SimulatedConnector(device: device)
        let simulation = self.simulation
        return try await simulation.run {
            let (stream, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
            async let collected: [UpdateEvent] = {
                var events: [UpdateEvent] = []
                for await event in stream { events.append(event) }
                return events
            }()
            let result: Result<UpdateReport, OTAError>
            do throws(OTAError) {
                result = .success(try await engine.update(image, using: GenericProtocolClient(), connector: connector, events: sink))
            } catch {
                result = .failure(error)
            }
            return Outcome(result: result, events: await collected, virtualTime: simulation.now)
        }
    }
}
