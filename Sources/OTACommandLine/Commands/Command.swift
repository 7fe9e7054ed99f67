/// One `ota` subcommand.
protocol Command: Sendable {
    /// Its arguments and help.
    static var spec: CommandSpec { get }
    /// Runs it with parsed arguments and returns the exit code.
    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode
}
