import OTACore

/// `ota protocols`: the protocols this build links, with their parameters — every line from the
/// parameters' own declarations.
enum ProtocolsCommand: Command {
    static let spec = CommandSpec(
        name: "protocols",
        summary: "List the update protocols this build of ota can speak, with their parameters.",
        options: [
            .init(name: "--protocol", valueName: "NAME", help: "only this protocol, repeatable", repeatable: true),
            .init(name: "--json", help: "print one JSON object per protocol"),
            .init(name: "--markdown", help: "print each protocol's parameters as a Markdown table (the protocol docs embed it)"),
        ]
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let descriptors: [ProtocolDescriptor]
        do {
            descriptors = try environment.registry.selected(by: arguments, command: "protocols")
        } catch {
            streams.err("ota: error: \(error)\n")
            return .usage
        }
        for descriptor in descriptors {
            if arguments.flag("--json") {
                streams.out(json(descriptor).serialized + "\n")
            } else if arguments.flag("--markdown") {
                streams.out(markdown(descriptor))
            } else {
                streams.out("\(descriptor.name)\n  \(descriptor.summary)\n")
                for parameter in descriptor.parameters {
                    streams.out("  --param \(parameter.name)=…  \(parameter.helpText)\n")
                }
            }
        }
        return .success
    }

    /// One protocol as a JSON object: name, summary, and each parameter with its kind, range
    /// and default.
    static func json(_ descriptor: ProtocolDescriptor) -> JSONValue {
        let parameters = descriptor.parameters.map { parameter in
            var object: [String: JSONValue] = [
                "name": .string(parameter.name), "summary": .string(parameter.summary), "default": .string(parameter.defaultText),
            ]
            switch parameter.kind {
            case .integer(let range):
                object["kind"] = .string("integer")
                object["minimum"] = .number(Double(range.lowerBound))
                object["maximum"] = .number(Double(range.upperBound))
            case .duration(let range):
                object["kind"] = .string("milliseconds")
                object["minimum"] = .number(Double(range.lowerBound))
                object["maximum"] = .number(Double(range.upperBound))
            case .uuid:
                object["kind"] = .string("uuid")
            case .text:
                object["kind"] = .string("text")
            }
            return JSONValue.object(object)
        }
        return .object(["name": .string(descriptor.name), "summary": .string(descriptor.summary), "parameters": .array(parameters)])
    }

    /// One protocol's parameters as a Markdown table, as embedded in docs/protocols/NAME.md.
    static func markdown(_ descriptor: ProtocolDescriptor) -> String {
        guard !descriptor.parameters.isEmpty else { return "Protocol `\(descriptor.name)` has no parameters.\n" }
        var lines = ["| parameter | values | default | sets |", "|---|---|---|---|"]
        for parameter in descriptor.parameters {
            lines.append("| `\(parameter.name)` | \(parameter.valueDescription) | `\(parameter.defaultText)` | \(parameter.summary) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
