import Foundation

/// The `ota` tool: dispatches to a subcommand and turns every outcome into an exit code.
public enum CommandLineTool {
    static let commands: [any Command.Type] = [
        UpdateCommand.self, AbortCommand.self, CampaignCommand.self, ImageCommand.self, ResetCommand.self, InspectCommand.self, ScanCommand.self,
        DoctorCommand.self,
        ProtocolsCommand.self, DevicesCommand.self,
        BenchmarkCommand.self, CompletionCommand.self,
    ]

    static let version = "0.1.0"

    static var overview: String {
        var lines = [
            "ota: update device firmware over Bluetooth LE.",
            "",
            "usage: ota COMMAND [options]",
            "",
            "commands:",
        ]
        for command in commands {
            let name = command.spec.name
            lines.append("  \(name)\(String(repeating: " ", count: max(1, 12 - name.count)))\(command.spec.summary)")
        }
        lines += [
            "", "Run 'ota COMMAND --help' for a command's options.", "Example: ota update firmware.bin --protocol generic --device sim:esp32s3-mtu244-2m",
        ]
        return lines.joined(separator: "\n")
    }

    /// Runs the tool with `arguments` (without the program name) and returns the exit code.
    public static func run(_ arguments: [String], streams: any OutputStreams, environment: ToolEnvironment = .standard) async -> Int32 {
        guard let first = arguments.first else {
            streams.err(overview + "\n")
            return ExitCode.usage.rawValue
        }
        switch first {
        case "-h", "--help", "help":
            if first == "help", arguments.count > 1, let command = commands.first(where: { $0.spec.name == arguments[1] }) {
                streams.out(command.spec.help + "\n")
            } else {
                streams.out(overview + "\n")
            }
            return ExitCode.success.rawValue
        case "--version":
            streams.out("ota \(version)\n")
            return ExitCode.success.rawValue
        default:
            break
        }
        guard let command = commands.first(where: { $0.spec.name == first }) else {
            streams.err("ota: error: \(UsageError("unknown command '\(first)'"))\n")
            return ExitCode.usage.rawValue
        }
        do {
            let parsed = try ArgumentParser.parse(Array(arguments.dropFirst()), for: command.spec)
            if parsed.wantsHelp {
                streams.out(command.spec.help + "\n")
                return ExitCode.success.rawValue
            }
            return await command.run(parsed, streams: streams, environment: environment).rawValue
        } catch {
            streams.err("ota: error: \(error)\n")
            return ExitCode.usage.rawValue
        }
    }

    /// What `ota` makes of an argument vector before anything runs: the command, its options'
    /// values, and the usage error the tool would print.
    public struct CheckedArguments: Sendable {
        /// The command named, or nil (no arguments, help, version, an unknown command).
        public var command: String?
        /// The options' values by name (`"--param": ["window=4"]`), as parsed.
        public var values: [String: [String]] = [:]
        /// The usage error's line as `ota` prints it (without the `ota: error: ` prefix), or nil
        /// when the arguments pass these checks.
        public var error: String?
    }

    /// Parses `arguments` (without the program name) as ``run(_:streams:environment:)`` does and
    /// runs the checks that need no device, file or network: the command's options and
    /// positionals, `--param KEY=VALUE`, the simulator's options (but `--sim-key`, a file), and
    /// `ota image`'s action, hash and slot. Nothing connects, nothing is read or written; for the
    /// `cli-arguments` fuzz target (decision 0056).
    public static func check(_ arguments: [String]) -> CheckedArguments {
        var result = CheckedArguments()
        guard let first = arguments.first, let command = commands.first(where: { $0.spec.name == first }) else { return result }
        result.command = first
        do {
            let parsed = try ArgumentParser.parse(Array(arguments.dropFirst()), for: command.spec)
            result.values = parsed.values
            if parsed.wantsHelp { return result }
            if command.spec.option(named: "--param") != nil {
                _ = try UpdatePlan.parameters(parsed, command: first)
            }
            if command.spec.option(named: "--sim-speed") != nil {
                var values = parsed.values
                values["--sim-key"] = nil
                _ = try SimulatorOptions.parse(values, command: first, interactive: false)
            }
            if command == ImageCommand.self {
                _ = try ImageCommand.check(parsed)
            }
            if command == BenchmarkCommand.self, let size = parsed.value("--size") {
                _ = try BenchmarkCommand.parseSize(size)
            }
        } catch {
            result.error = error.description
        }
        return result
    }

    /// The signals that pause an update like Ctrl-C (the device keeps what it received, a
    /// simulated device's state is saved, exit 130): SIGTERM from a service manager or `kill`,
    /// SIGHUP from a closed terminal, as well as SIGINT.
    static let interruptSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// Runs the tool as a process: real streams, Ctrl-C (or SIGTERM, SIGHUP) cancels the command, exits.
    ///
    /// - Parameter environment: the protocols, catalogs and simulated devices; an app that links
    ///   more protocols passes its own.
    public static func main(environment: ToolEnvironment = .standard) async -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let task = Task { await run(arguments, streams: StandardStreams(), environment: environment) }
        let interrupt = InterruptHandler(signals: interruptSignals) { _ in task.cancel() }
        let code = await task.value
        interrupt.cancel()
        exit(code)
    }
}
