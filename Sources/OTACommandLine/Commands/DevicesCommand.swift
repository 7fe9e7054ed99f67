import OTACore
import OTATransportSimulator

/// `ota devices`: the devices `--device` can name. For now, the simulated profiles.
enum DevicesCommand: Command {
    static let spec = CommandSpec(
        name: "devices",
        summary: "List the simulated hardware profiles for --device sim:PROFILE, which run any protocol ('ota scan' lists the fleet and real devices).",
        options: [.init(name: "--json", help: "print one JSON object per device")]
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        for profile in DeviceProfile.builtIn {
            let capacity = profile.link.theoreticalGoodput(valueLength: profile.link.deviceMaximumMTU - 3)
            if arguments.flag("--json") {
                let object = JSONValue.object([
                    "address": .string("sim:\(profile.name)"),
                    "summary": .string(profile.summary),
                    "link": .string(profile.link.summary),
                    "maximumMTU": .number(Double(profile.link.deviceMaximumMTU)),
                    "slotSize": .number(Double(profile.slotSize)),
                    "linkCapacity": .number(capacity.rounded()),
                ])
                streams.out(object.serialized + "\n")
            } else {
                streams.out("sim:\(profile.name)\n")
                streams.out("  \(profile.summary)\n")
                streams.out(
                    "  \(profile.link.summary); MTU ≤ \(profile.link.deviceMaximumMTU); link capacity \(Wording.rate(capacity)); slot \(Wording.bytes(profile.slotSize))\n"
                )
            }
        }
        return .success
    }
}
