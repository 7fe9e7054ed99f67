/// `ota protocols`: the protocols this build links, with their parameters.
enum ProtocolsCommand: Command {
    static let spec = CommandSpec(
        name: "protocols",
        summary: "List the update protocols this build of ota can speak, with their parameters.",
        options: [.init(name: "--json", help: "print one JSON object per protocol")]
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        for descriptor in environment.registry.all {
            if arguments.flag("--json") {
                let parameters = descriptor.parameters.map { JSONValue.object(["name": .string($0.name), "summary": .string($0.summary)]) }
                let object = JSONValue.object([
                    "name": .string(descriptor.name), "summary": .string(descriptor.summary), "parameters": .array(parameters),
                ])
                streams.out(object.serialized + "\n")
            } else {
                streams.out("\(descriptor.name)\n  \(descriptor.summary)\n")
                for parameter in descriptor.parameters {
                    streams.out("  --param \(parameter.name)=…  \(parameter.summary)\n")
                }
            }
        }
        return .success
    }
}
