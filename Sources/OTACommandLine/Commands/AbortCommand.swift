import Foundation
import OTACore
import OTATransportSimulator

/// `ota abort`: tell a device to discard an update in progress. Never done implicitly.
enum AbortCommand: Command {
    static let spec = CommandSpec(
        name: "abort",
        summary: "Tell a device to discard the update in progress, so the next update starts over.",
        options: [
            .init(name: "--protocol", valueName: "NAME", help: "update protocol; default: the device's firmware (fleet devices)"),
            .init(name: "--device", valueName: "ADDRESS", help: "device; default \(SimulatedTarget.defaultAddress)"),
            .init(name: "--param", valueName: "KEY=VALUE", help: "protocol parameter, repeatable", repeatable: true),
        ] + SimulatorOptions.specOptions.filter { $0.name == "--sim-state" || $0.name == "--seed" },
        discussion: """
            Aborting is always explicit: a lost link or Ctrl-C pauses an update, it never aborts it.
            A simulated device only has an update in progress to abort when --sim-state keeps it
            between runs.
            """
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let descriptor: ProtocolDescriptor
        let client: any UpdateProtocol
        let target: SimulatedTarget
        let firmware: (protocolName: String, parameters: ProtocolParameters)
        let simulator: SimulatorOptions
        do {
            let device = arguments.value("--device") ?? SimulatedTarget.defaultAddress
            guard case .simulated(let simulated) = try DeviceTarget.resolve(device, adapter: nil, in: environment, command: "abort") else {
                throw UsageError("aborting a real device needs the BlueZ connection of 'ota update'; not supported by 'ota abort' yet", command: "abort")
            }
            target = simulated
            guard let chosen = target.firmware(chosen: arguments.value("--protocol")) else {
                throw UsageError("no protocol given: pass --protocol NAME", command: "abort")
            }
            firmware = chosen
            let parameters = try UpdatePlan.parameters(arguments, command: "abort")
            do {
                descriptor = try environment.registry.descriptor(named: arguments.value("--protocol") ?? chosen.protocolName)
                client = try descriptor.makeClient(parameters)
            } catch {
                throw UsageError(error.message, command: "abort")
            }
            simulator = try SimulatorOptions.parse(arguments, command: "abort", interactive: false)
        } catch {
            return UpdateCommand.fail(error, streams: streams)
        }
        let simulation = Simulation(seed: simulator.seed)
        do throws(OTAError) {
            let model = try environment.registry.descriptor(named: firmware.protocolName).makeDeviceModel(firmware.parameters)
            let device = try simulator.makeDevice(profile: target.profile, model: model, simulation: simulation, imageSize: 0)
            let engine = UpdateEngine(clock: simulation.clock)
            try await runAbort(engine, client, device: device, simulation: simulation).get()
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
