import Foundation
import OTACore
import OTATransportSerial
import OTATransportUDP

/// `ota scan`: list the devices in range with the family and protocol each would get, and why.
enum ScanCommand: Command {
    static let spec = CommandSpec(
        name: "scan",
        summary: "List devices (the simulated fleet, or real ones with --bluez) with the family and protocol each would get.",
        options: [
            .init(
                name: "--transport", valueName: "NAME",
                help: "the transport to scan with (sim, bluez; udp and serial have no discovery); default the default device's (sim)"),
            .init(name: "--bluez", help: "scan real devices through BlueZ instead of listing the simulated fleet (--transport bluez)"),
            .init(name: "--adapter", valueName: "NAME", help: "with --bluez: the adapter, e.g. hci0; default the first powered one"),
            .init(name: "--duration", valueName: "SECONDS", help: "with --bluez: how long to listen, 1...60; default 5"),
            .init(name: "--catalog", valueName: "FILE", help: "device catalog to add to the built-in one, repeatable", repeatable: true),
            .init(name: "--json", help: "print one JSON object per device"),
        ]
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let catalog: DeviceCatalog
        do {
            catalog = try environment.catalog(adding: arguments.values["--catalog"] ?? [])
        } catch {
            return UpdateCommand.fail(error, streams: streams)
        }
        let heard: [DiscoveredDevice]
        let provider: any TransportProvider
        do {
            let seconds = try UpdatePlan.integer(arguments.value("--duration") ?? "5", option: "--duration", in: 1...60, command: "scan")
            provider = try scanProvider(arguments, environment: environment)
            let scanner: any DeviceScanner
            do throws(OTAError) {
                scanner = try provider.scanner(options: TransportOptions(arguments.values))
            } catch {
                throw UsageError(error.message, command: "scan")
            }
            heard = try await scanner.listen(for: .seconds(seconds))
        } catch {
            return UpdateCommand.fail(error, streams: streams)
        }
        // Asking is no error, but an empty list would teach nothing: say how to name such a device.
        if heard.isEmpty, let form = undiscoverableAddressForm(provider) {
            streams.err(
                "ota scan: \(provider.name) has no discovery (its devices do not advertise): pass --device \(form) to update, image list|test|confirm|erase and reset\n"
            )
        }
        for (address, advertisement) in heard.map({ ($0.address, $0.advertisement) }) {
            let verdict: (family: String?, protocolName: String?, why: String)
            do {
                if let family = try catalog.family(for: advertisement, device: address) {
                    verdict = (family.name, family.protocolName, "\(family.match.explanation) (\(family.source))")
                } else {
                    verdict = (nil, nil, "matches no family: pass --protocol, or add a family with --catalog")
                }
            } catch {
                verdict = (nil, nil, error.message)
            }
            let services = advertisement.serviceUUIDs.map(\.description)
            if arguments.flag("--json") {
                var object: [String: JSONValue] = [
                    "address": .string(address), "name": .string(advertisement.name ?? ""),
                    "rssi": .number(Double(advertisement.rssi ?? 0)), "services": .array(services.map(JSONValue.string)),
                    "why": .string(verdict.why),
                ]
                if let family = verdict.family { object["family"] = .string(family) }
                if let name = verdict.protocolName { object["protocol"] = .string(name) }
                streams.out(JSONValue.object(object).serialized + "\n")
            } else {
                streams.out("\(address)  \"\(advertisement.name ?? "")\"  \(advertisement.rssi.map { "\($0) dBm" } ?? "")\n")
                streams.out("  family: \(verdict.family ?? "none"), protocol: \(verdict.protocolName ?? "none")\n")
                streams.out("  why: \(verdict.why)\n")
            }
        }
        return .success
    }

    /// How to name a device of a transport that cannot discover any (SMP over UDP or a serial
    /// line), or `nil` for one that can.
    static func undiscoverableAddressForm(_ provider: any TransportProvider) -> String? {
        switch provider {
        case is UDPTransportProvider: "udp:HOST[:PORT]"
        case is SerialTransportProvider: "serial:PATH[@BAUD]"
        default: nil
        }
    }

    /// The transport `--transport` (or `--bluez`) names, else the default device's.
    private static func scanProvider(_ arguments: ParsedArguments, environment: ToolEnvironment) throws(UsageError) -> any TransportProvider {
        do throws(OTAError) {
            if let name = arguments.value("--transport") ?? (arguments.flag("--bluez") ? "bluez" : nil) {
                return try environment.transports.provider(named: name)
            }
            return try environment.transports.provider(for: environment.defaultDevice)
        } catch {
            throw UsageError(error.message, command: "scan")
        }
    }
}
