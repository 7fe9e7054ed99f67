// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTATransportCoreBluetooth
import OTATransportSimulator

/// One simulated device within range of a stand-in phone, updated through the CoreBluetooth
/// transport: the CoreBluetooth counterpart of `UpdateHarness`.
struct CoreBluetoothHarness: Sendable {
    let world: StandInWorld
    let device: SimulatedDevice
    let peripheral: StandInPeripheral
    var configuration = UpdateConfiguration()

    init(profile: DeviceProfile, model: any DeviceModel, seed: UInt64 = 1, standIn: StandInWorld.Configuration = .init()) {
        world = StandInWorld(seed: seed)
        world.configuration = standIn
        device = SimulatedDevice(profile: profile, model: model, simulation: world.simulation)
        peripheral = world.addPeripheral(device)
    }

    init(profile: DeviceProfile, seed: UInt64 = 1, makeModel: (Simulation) -> any DeviceModel) {
        world = StandInWorld(seed: seed)
        device = SimulatedDevice(profile: profile, model: makeModel(world.simulation), simulation: world.simulation)
        peripheral = world.addPeripheral(device)
    }

    /// A central of the app, in this world.
    func makeCentral(restoreIdentifier: String? = nil) -> CoreBluetoothCentral {
        let clock = world.clock
        return world.withCurrent { CoreBluetoothCentral(clock: clock, restoreIdentifier: restoreIdentifier) }
    }

    /// What one update did.
    struct Outcome: Sendable {
        var result: Result<UpdateReport, OTAError>
        var events: [UpdateEvent]
        var virtualTime: Duration

        var states: [UpdateState] {
            events.compactMap { event in
                if case .state(let state, _, _) = event { return state }
                return nil
            }
        }

        var notes: [String] {
            events.compactMap { event in
                if case .note(let text, _) = event { return text }
                return nil
            }
        }
    }

    /// Updates the device with `image` through a fresh central (or `central`), while `meanwhile`
    /// runs beside it in virtual time (to switch Bluetooth off, drop links…).
    func update(
        _ image: FirmwareImage, using client: any UpdateProtocol, central: CoreBluetoothCentral? = nil,
        meanwhile: (@Sendable (StandInWorld) async -> Void)? = nil
    ) async throws -> Outcome {
        let central = central ?? makeCentral()
        let connector = central.connector(for: peripheral.identifier)
        return try await update(image, using: client, connector: connector, meanwhile: meanwhile)
    }

    func update(
        _ image: FirmwareImage, using client: any UpdateProtocol, connector: any Connector,
        meanwhile: (@Sendable (StandInWorld) async -> Void)? = nil
    ) async throws -> Outcome {
        let engine = UpdateEngine(configuration: configuration, clock: world.clock)
        let world = self.world
        return try await world.run {
            let (stream, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
            async let collected: [UpdateEvent] = {
                var events: [UpdateEvent] = []
                for await event in stream { events.append(event) }
                return events
            }()
            async let side: Void = { await meanwhile?(world) }()
            let result: Result<UpdateReport, OTAError>
            do throws(OTAError) {
                result = .success(try await engine.update(image, using: client, connector: connector, events: sink))
            } catch {
                result = .failure(error)
            }
            await side
            return Outcome(result: result, events: await collected, virtualTime: world.simulation.now)
        }
    }

    /// The first `count` bytes of the device's flash.
    func flashContents(_ count: Int) -> Data { device.flash.read(0..<count) }

    /// Deterministic pseudo-random image bytes.
    static func image(size: Int, seed: UInt64 = 7) throws -> FirmwareImage {
        var random = SeededRandom(seed: seed)
        var bytes = [UInt8](repeating: 0, count: size)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        return try FirmwareImage(bytes: Data(bytes), name: "test-\(size).bin")
    }
}
#endif
