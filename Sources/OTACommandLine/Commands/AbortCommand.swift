import Foundation
import OTACore

/// `ota abort`: tell a device to discard an update in progress. Never done implicitly.
enum AbortCommand: Command {
    static let spec = CommandSpec(
        name: "abort",
        summary: "Tell a device to discard the update in progress, so the next update starts over.",
        options: CommandSpec.Option.deviceTarget(protocolHelp: "update protocol; default: the device's firmware (fleet devices)")
            + SimulatorOptions.specOptions.filter { $0.name == "--sim-state" || $0.name == "--seed" },
        discussion: """
            Aborting is always explicit: a lost link or Ctrl-C pauses an update, it never aborts it.
            A simulated device only has an update in progress to abort when --sim-state keeps it
            between runs.
            """
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let device: any TransportDevice
        let protocolName: String
        let client: any UpdateProtocol
        do {
            device = try await environment.device(
                arguments.value("--device") ?? environment.defaultDevice, arguments: arguments, interactive: false, command: "abort"
            )
            guard let chosen = arguments.value("--protocol") ?? device.firmwareProtocol else {
                throw UsageError("no protocol given: pass --protocol NAME", command: "abort")
            }
            protocolName = chosen
            let parameters = try UpdatePlan.parameters(arguments, command: "abort")
            do {
                client = try environment.registry.descriptor(named: protocolName).makeClient(parameters)
            } catch {
                throw UsageError(error.message, command: "abort")
            }
            // Said before connecting, and naming the protocol.
            guard client is any AbortableUpdateProtocol else {
                throw OTAError(.invalidParameter, "protocol '\(protocolName)' has no abort command")
            }
        } catch {
            return UpdateCommand.fail(error, streams: streams)
        }
        do throws(OTAError) {
            let (reached, outcome) = try await device.withSession(SessionRequest(protocolName: protocolName)) { session throws(OTAError) in
                let engine = UpdateEngine(clock: session.clock)
                let outcome = try await session.run { () async throws(OTAError) in
                    try await engine.abort(using: client, connector: session.connector)
                }
                return (session.connector.deviceDescription, outcome)
            }
            switch outcome {
            case .discarded(let detail):
                streams.out("aborted the update in progress on \(reached) (\(detail))\n")
            case .nothingInProgress(let detail):
                streams.out("nothing to abort on \(reached): no update in progress (\(detail))\n")
            case .unconfirmed:
                streams.out("sent ABORT to \(reached); \(protocolName) devices do not say whether an update was in progress\n")
            }
            return .success
        } catch {
            streams.err("ota: error: \(error.message)\n")
            return ExitCode.forError(error)
        }
    }
}
