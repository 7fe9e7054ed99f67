import Foundation
import OTACore

#if canImport(OTATransportBlueZ)
import OTATransportBlueZ
#endif

/// `ota doctor`: is this machine ready to update real devices?
enum DoctorCommand: Command {
    static let spec = CommandSpec(
        name: "doctor",
        summary:
            "Check the Bluetooth stack: bluetoothd, its version, whether it uses EATT, adapters and their power, and what is missing.",
        options: [.init(name: "--json", help: "print the report as one JSON object")],
        discussion: "exit codes: 0 ready, 4 not ready (each problem is printed with its fix)"
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        #if canImport(OTATransportBlueZ)
        return await examineBlueZ(arguments, streams: streams)
        #else
        streams.err("ota: error: 'ota doctor' checks BlueZ, which this build does not have (BlueZ is Linux-only)\n")
        return .deviceUnavailable
        #endif
    }

    #if canImport(OTATransportBlueZ)
    private static func examineBlueZ(_ arguments: ParsedArguments, streams: any OutputStreams) async -> ExitCode {
        let report = await BlueZDoctor().examine()
        if arguments.flag("--json") {
            let adapters = report.adapters.map { adapter in
                JSONValue.object([
                    "name": .string(adapter.name), "address": .string(adapter.address), "powered": .bool(adapter.isPowered),
                ])
            }
            var object: [String: JSONValue] = [
                "ready": .bool(report.isReady), "bluetoothd": .bool(report.isBluetoothdRunning),
                "version": .string(report.bluezVersion ?? ""), "adapters": .array(adapters),
                "problems": .array(report.findings.map { .string($0.description) }),
            ]
            if let settings = report.gattSettings, let summary = report.eattSummary {
                object["eatt"] = .object([
                    "enabled": .bool(settings.isEATTEnabled), "channels": .number(Double(settings.channels)),
                    "source": .string(settings.description), "meaning": .string(summary),
                    "devices": .array(
                        report.connectedDevices.map { device in
                            .object([
                                "address": .string(device.address), "mayReorder": .bool(device.bearers.mayReorder),
                                "reason": .string(device.bearers.reason),
                            ])
                        }),
                ])
            }
            streams.out(JSONValue.object(object).serialized + "\n")
        } else {
            streams.out(
                "bluetoothd: \(report.isBluetoothdRunning ? "running" : "not running") on \(report.bus)\(report.bluezVersion.map { ", BlueZ \($0)" } ?? "")\n")
            if let controllers = report.kernelControllers {
                streams.out("kernel controllers: \(controllers.isEmpty ? "none" : controllers.joined(separator: ", "))\n")
            } else {
                streams.out("kernel controllers: no Bluetooth support in this kernel\n")
            }
            for adapter in report.adapters {
                streams.out("adapter \(adapter.name) \(adapter.address): \(adapter.isPowered ? "powered" : "powered off")\n")
            }
            if let eatt = report.eattSummary { streams.out("\(eatt)\n") }
            for device in report.connectedDevices {
                let verdict = device.bearers.mayReorder ? "writes without response go as write requests" : "write commands"
                streams.out("connected \(device.address): \(verdict); \(device.bearers.reason)\n")
            }
            for finding in report.findings {
                streams.out("problem: \(finding)\n")
            }
            streams.out(report.isReady ? "ready\n" : "not ready\n")
        }
        return report.isReady ? .success : .deviceUnavailable
    }
    #endif
}
