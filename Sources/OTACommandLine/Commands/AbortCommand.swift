import Foundation
import OTACore
import OTATransportSimulator

/// `ota abort`: tell a device to discard an update in progress. Never done implicitly.
enum AbortCommand: Command {
    static let spec = CommandSpec(
        name: "abort",
        summary: "Tell a device to discard the update in progress, so the next update starts over.",
        options: [
            .init(name: "--protocol", valueName: "NAME", help: "update protocol (see 'ota protocols'); required"),
            .init(name: "--device", valueName: "ADDRESS", help: "device; default \(DeviceAddress.defaultAddress)"),
            .init(name: "--param", valueName: "KEY=VALUE", help: "protocol parameter, repeatable", repeatable: true),
        ] + SimulatorOptions.specOptions.filter { $0.name == "--sim-state" || $0.name == "--seed" },
        discussion: """
            Aborting is always explicit: a lost link or Ctrl-C pauses an update, it never aborts it.
            A simulated device only has an update in progress to abort when --sim-state keeps it
            between runs.
            """
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams) async -> ExitCode {
        let descriptor: ProtocolDescriptor
        let client: any UpdateProtocol
        let profile: DeviceProfile
        let simulator: SimulatorOptions
        let parameters: ProtocolParameters
        do {
            guard let name = arguments.value("--protocol") else {
                throw UsageError("no protocol given: pass --protocol NAME", command: "abort")
            }
            do {
                descriptor = try BuiltInProtocols.registry.descriptor(named: name)
                parameters = try UpdateCommand.parameters(arguments)
                client = try descriptor.makeClient(parameters)
            } catch let error as OTAError {
                throw UsageError(error.message, command: "abort")
            }
            guard case .simulated(let simulated) = try DeviceAddress.parse(arguments.value("--device") ?? DeviceAddress.defaultAddress) else {
                throw UsageError("unsupported device", command: "abort")
            }
            profile = simulated
            simulator = try SimulatorOptions.parse(arguments, command: "abort", interactive: false)
        } catch {
            streams.err("ota: error: \(error)\n")
            return .usage
        }
        let simulation = Simulation(seed: simulator.seed)
        do throws(OTAError) {
            let model = try descriptor.makeDeviceModel(parameters)
            let device = try simulator.makeDevice(profile: profile, model: model, simulation: simulation, imageSize: 0)
            let engine = UpdateEngine(clock: simulation.clock)
            let outcome: Result<Void, OTAError> = try await runAbort(engine, client, device: device, simulation: simulation)
            try outcome.get()
            try simulator.save(device)
            streams.out("aborted the update in progress on \(device.address)\n")
            return .success
        } catch {
            streams.err("ota: error: \(error.message)\n")
            return ExitCode.forError(error)
        }
    }

    private static func runAbort(
        _ engine: UpdateEngine,
        _ client: any UpdateProtocol,
        device: SimulatedDevice,
        simulation: Simulation
    ) async throws(OTAError) -> Result<Void, OTAError> {
        do {
            return try await simulation.run {
                do throws(OTAError) {
                    try await engine.abort(using: client, connector: SimulatedConnector(device: device))
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            throw OTAError(.internal, "simulation failed: \(error)")
        }
    }
}
