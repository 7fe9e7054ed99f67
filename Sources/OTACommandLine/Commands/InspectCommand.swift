import Foundation
import OTACore

/// `ota inspect FILE`: what a firmware file or package holds, and whether it is consistent.
enum InspectCommand: Command {
    static let spec = CommandSpec(
        name: "inspect",
        summary: "Show what a firmware image, package or protocol container (Nordic DFU .zip) holds, and whether it is consistent.",
        options: [
            .init(name: "--protocol", valueName: "NAME", help: "read FILE as this protocol's container; default: every protocol that knows a container format")
        ],
        positionals: [.init(name: "FILE", help: "a .bin, a .zip, or a package directory")],
        discussion: "exit codes: 0 consistent, 2 usage, 3 inconsistent or unreadable"
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let url = URL(fileURLWithPath: arguments.positionals[0])
        do {
            if FirmwarePackage.isPackage(url) {
                let package = try FirmwarePackage.open(url)
                try UpdatePlan.check(package, registry: environment.registry)
                streams.out("package \(package.source): \(package.name ?? "unnamed") \(package.version ?? "")\n")
                if let name = package.protocolName { streams.out("  protocol: \(name)\n") }
                if !package.families.isEmpty { streams.out("  families: \(package.families.joined(separator: ", "))\n") }
                if !package.hardware.isEmpty { streams.out("  hardware: \(package.hardware.joined(separator: ", "))\n") }
                for image in package.images {
                    streams.out("  \(image.file): \(image.size) bytes, SHA-256 \(Hex.bytes(image.sha256)) (verified)\n")
                }
                streams.out("consistent\n")
                return .success
            }
            let descriptors: [ProtocolDescriptor]
            if let name = arguments.value("--protocol") {
                do { descriptors = [try environment.registry.descriptor(named: name)] } catch { throw UsageError(error.message, command: "inspect") }
            } else {
                descriptors = environment.registry.all
            }
            for descriptor in descriptors {
                guard let inspection = try descriptor.containerFormat?.inspect(url) else { continue }
                streams.out(inspection.report.hasSuffix("\n") ? inspection.report : inspection.report + "\n")
                if inspection.problems.isEmpty {
                    streams.out("consistent: ready for --protocol \(descriptor.name)\n")
                    return .success
                }
                streams.err("ota: error: \(url.lastPathComponent) is inconsistent: \(inspection.problems.joined(separator: "; "))\n")
                return .badInput
            }
            let image = try FirmwareImage(contentsOf: url)
            let digest = Hex.bytes(image.sha256)
            streams.out("raw image \(image.name): \(image.count) bytes, CRC-32 \(Hex.number(image.crc32, digits: 8)), SHA-256 \(digest)\n")
            return .success
        } catch {
            return UpdateCommand.fail(error, streams: streams)
        }
    }
}
