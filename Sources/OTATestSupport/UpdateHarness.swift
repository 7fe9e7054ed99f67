import Foundation
import OTACore
import OTATransportSimulator

/// One simulated device running a protocol's device model, and a way to update it and collect
/// what happened. Shared by the protocol test targets.
public struct UpdateHarness: Sendable {
    /// The simulation the device lives in.
    public let simulation: Simulation
    /// The device.
    public let device: SimulatedDevice
    /// The engine's configuration for every update.
    public var configuration = UpdateConfiguration()

    /// Creates a device with `model` on `profile`'s hardware, at `address` (`sim:` and the
    /// profile's name by default).
    public init(profile: DeviceProfile, model: any DeviceModel, seed: UInt64 = 1, address: String? = nil) {
        simulation = Simulation(seed: seed)
        device = SimulatedDevice(profile: profile, model: model, simulation: simulation, address: address)
    }

    /// Creates a device whose model needs the simulation (for its clock), made by `makeModel`.
    public init(profile: DeviceProfile, seed: UInt64 = 1, makeModel: (Simulation) -> any DeviceModel) {
        simulation = Simulation(seed: seed)
        device = SimulatedDevice(profile: profile, model: makeModel(simulation), simulation: simulation)
    }

    /// Deterministic pseudo-random image bytes.
    public static func image(size: Int, seed: UInt64 = 7) throws -> FirmwareImage {
        var random = SeededRandom(seed: seed)
        var bytes = [UInt8](repeating: 0, count: size)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        return try FirmwareImage(bytes: Data(bytes), name: "test-\(size).bin")
    }

    /// What one update did.
    public struct Outcome: Sendable {
        /// The report, or the error.
        public var result: Result<UpdateReport, OTAError>
        /// Every event, in order.
        public var events: [UpdateEvent]
        /// Virtual time when the update ended.
        public var virtualTime: Duration

        /// The error, or a test failure if the update succeeded.
        public func failure() throws -> OTAError {
            switch result {
            case .success: throw OTAError(.internal, "update unexpectedly succeeded")
            case .failure(let error): return error
            }
        }

        /// The states entered, in order.
        public var states: [UpdateState] {
            events.compactMap { event in
                if case .state(let state, _, _) = event { return state }
                return nil
            }
        }

        /// The notes, in order.
        public var notes: [String] {
            events.compactMap { event in
                if case .note(let text, _) = event { return text }
                return nil
            }
        }
    }

    /// Runs one update of `image` with `client` through `connector` (the device's own by default);
    /// `observe` sees each event as it happens (to act mid-update: change the image's file).
    public func update(
        _ image: FirmwareImage, using client: any UpdateProtocol, connector: (any Connector)? = nil,
        observe: (@Sendable (UpdateEvent) -> Void)? = nil
    ) async throws -> Outcome {
        let engine = UpdateEngine(configuration: configuration, clock: simulation.clock)
        let connector = connector ?? SimulatedConnector(device: device)
        let simulation = self.simulation
        return try await simulation.run {
            let (stream, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
            async let collected: [UpdateEvent] = {
                var events: [UpdateEvent] = []
                for await event in stream {
                    observe?(event)
                    events.append(event)
                }
                return events
            }()
            let result: Result<UpdateReport, OTAError>
            do throws(OTAError) {
                result = .success(try await engine.update(image, using: client, connector: connector, events: sink))
            } catch {
                result = .failure(error)
            }
            return Outcome(result: result, events: await collected, virtualTime: simulation.now)
        }
    }

    /// The first `count` bytes of the device's flash.
    public func flashContents(_ count: Int) -> Data {
        device.flash.read(0..<count)
    }
}

extension FirmwareImage {
    /// Test support only: the whole image as one buffer, to compare with what a device holds
    /// (empty when a file-backed image can no longer be read, so the comparison fails).
    /// Protocol code reads ranges (`try image[range]`) or streams (`forEachWindow`) instead.
    public var bytes: Data { (try? allBytes()) ?? Data() }

    /// Test support only: non-empty bytes as an image in memory, where a test cannot throw (a
    /// state machine built in a non-throwing helper). Traps on empty bytes.
    public static func inMemory(_ bytes: Data, name: String = "image") -> FirmwareImage {
        do { return try FirmwareImage(bytes: bytes, name: name) } catch { preconditionFailure("\(error)") }
    }
}
