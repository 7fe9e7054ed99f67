import Foundation
import OTACore
import OTATransportSimulator

/// `ota update FIRMWARE`: send an image to a device.
enum UpdateCommand: Command {
    static let spec = CommandSpec(
        name: "update",
        summary: "Send a firmware image to a device and wait for the device to accept it.",
        options: [
            .init(name: "--protocol", valueName: "NAME", help: "update protocol (see 'ota protocols'); required"),
            .init(name: "--device", valueName: "ADDRESS", help: "device to update; default \(DeviceAddress.defaultAddress) (see 'ota devices')"),
            .init(name: "--param", valueName: "KEY=VALUE", help: "protocol parameter, repeatable (see 'ota protocols')", repeatable: true),
            .init(name: "--json", help: "print one JSON event per line on standard output"),
            .init(name: "--mtu", valueName: "BYTES", help: "ATT MTU the app offers, 23...517; default 517"),
            .init(name: "--resume-attempts", valueName: "N", help: "reconnections in a row without progress before giving up, 0...100 (0: never); default 5"),
        ] + SimulatorOptions.specOptions,
        positionals: [.init(name: "FIRMWARE", help: "the firmware image file (.bin)")],
        discussion: """
            Progress goes to standard error (a bar on a terminal, plain lines otherwise); the result
            goes to standard output. Ctrl-C pauses: the device keeps what it received, and running
            the same command again continues or restarts, as the protocol allows. Resumable protocols
            (framed) reconnect by themselves after a lost link. Simulated devices start with erased
            flash unless --sim-state keeps them between runs.

            exit codes: 0 updated, 1 device refused the image, 2 usage, 3 bad firmware file,
            4 device unavailable, 5 link lost or timed out, 130 interrupted
            """
    )

    /// Everything the command line decided, before anything runs.
    struct Plan: Sendable {
        var descriptor: ProtocolDescriptor
        var parameters: ProtocolParameters
        var client: any UpdateProtocol
        var profile: DeviceProfile
        var image: FirmwareImage
        var json: Bool
        var mtu: Int
        var resumeAttempts: Int
        var simulator: SimulatorOptions
    }

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams) async -> ExitCode {
        let plan: Plan
        do {
            plan = try makePlan(arguments, streams: streams)
        } catch let error as UsageError {
            streams.err("ota: error: \(error)\n")
            return .usage
        } catch let error as OTAError {
            streams.err("ota: error: \(error.message)\n")
            return ExitCode.forError(error)
        } catch {
            streams.err("ota: error: \(error)\n")
            return .internalError
        }
        return await execute(plan, streams: streams)
    }

    static func makePlan(_ arguments: ParsedArguments, streams: any OutputStreams) throws -> Plan {
        guard let protocolName = arguments.value("--protocol") else {
            let names = BuiltInProtocols.registry.all.map(\.name).joined(separator: ", ")
            throw UsageError("no protocol given: pass --protocol NAME (available: \(names))", command: "update")
        }
        let descriptor: ProtocolDescriptor
        do {
            descriptor = try BuiltInProtocols.registry.descriptor(named: protocolName)
        } catch {
            throw UsageError(error.message, command: "protocols")
        }
        let parameters = try parameters(arguments)
        let client: any UpdateProtocol
        do {
            client = try descriptor.makeClient(parameters)
        } catch {
            throw UsageError(error.message, command: "protocols")
        }
        guard case .simulated(let profile) = try DeviceAddress.parse(arguments.value("--device") ?? DeviceAddress.defaultAddress) else {
            throw UsageError("unsupported device", command: "update")
        }
        let mtu = try integer(arguments.value("--mtu"), option: "--mtu", default: 517, in: 23...517)
        let resumeAttempts = try integer(arguments.value("--resume-attempts"), option: "--resume-attempts", default: 5, in: 0...100)
        let json = arguments.flag("--json")
        let simulator = try SimulatorOptions.parse(arguments, command: "update", interactive: streams.errorIsTerminal && !json)
        let image = try FirmwareImage(contentsOf: URL(fileURLWithPath: arguments.positionals[0]))
        guard image.count <= profile.slotSize else {
            throw OTAError(
                .imageTooLarge,
                "\(image.name) is \(image.count) bytes, larger than the \(profile.slotSize)-byte update slot of sim:\(profile.name)"
            )
        }
        return Plan(
            descriptor: descriptor, parameters: parameters, client: client, profile: profile, image: image,
            json: json, mtu: mtu, resumeAttempts: resumeAttempts, simulator: simulator
        )
    }

    /// The `--param KEY=VALUE` options as protocol parameters.
    static func parameters(_ arguments: ParsedArguments) throws(UsageError) -> ProtocolParameters {
        var parameters = ProtocolParameters()
        for pair in arguments.values["--param"] ?? [] {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError("--param '\(pair)' is not KEY=VALUE", command: "update")
            }
            parameters[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        return parameters
    }

    private static func integer(_ text: String?, option: String, default value: Int, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("\(option) '\(text)' is not an integer in \(range.lowerBound)...\(range.upperBound)", command: "update")
        }
        return number
    }

    static func execute(_ plan: Plan, streams: any OutputStreams) async -> ExitCode {
        let simulation = Simulation(seed: plan.simulator.seed, pace: plan.simulator.pace)
        let device: SimulatedDevice
        do {
            let model = try plan.descriptor.makeDeviceModel(plan.parameters)
            device = try plan.simulator.makeDevice(profile: plan.profile, model: model, simulation: simulation, imageSize: plan.image.count)
        } catch {
            streams.err("ota: error: \(error.message)\n")
            return ExitCode.forError(error)
        }
        let connector = SimulatedConnector(device: device, centralMTU: plan.mtu)
        var configuration = UpdateConfiguration()
        configuration.resume.maximumAttempts = plan.resumeAttempts
        let engine = UpdateEngine(configuration: configuration, clock: simulation.clock)
        let renderer: any EventRenderer =
            if plan.json { JSONRenderer(streams: streams) } else if streams.errorIsTerminal { ProgressBarRenderer(streams: streams) } else { LineRenderer(streams: streams) }
        let result: Result<UpdateReport, OTAError>
        do {
            result = try await simulation.run {
                let (events, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
                // Not a child task: on Ctrl-C the update is cancelled, but its last events
                // (paused, and why) must still be shown.
                let rendering = Task(executorPreference: simulation.executor) {
                    var renderer = renderer
                    for await event in events { renderer.render(event) }
                    renderer.finish()
                }
                let result: Result<UpdateReport, OTAError>
                do throws(OTAError) {
                    result = .success(try await engine.update(plan.image, using: plan.client, connector: connector, events: sink))
                } catch {
                    result = .failure(error)
                }
                await rendering.value
                return result
            }
        } catch {
            streams.err("ota: error: \(error)\n")
            return .internalError
        }
        do {
            try plan.simulator.save(device)
        } catch {
            streams.err("ota: error: \(error.message)\n")
        }
        return report(result, plan: plan, device: device.address, streams: streams)
    }

    private static func report(_ result: Result<UpdateReport, OTAError>, plan: Plan, device: String, streams: any OutputStreams) -> ExitCode {
        switch result {
        case .success(let report):
            if plan.json {
                JSONRenderer(streams: streams).emit([
                    "event": .string("result"), "status": .string("completed"), "device": .string(device),
                    "protocol": .string(plan.descriptor.name), "imageSize": .number(Double(report.imageSize)),
                    "imageCRC32": .string(Wording.hex32(report.imageCRC32)), "duration": .number(report.duration.seconds),
                    "goodput": .number(report.goodput.rounded()), "attMTU": .number(Double(report.link.attMTU)),
                    "bytesSent": .number(Double(report.bytesSent)), "resumes": .number(Double(report.resumes)),
                    "chunkSize": .number(Double(report.chunkSize)),
                ])
            } else {
                let rate = report.protocolDuration > .zero ? Double(report.bytesSent) / report.protocolDuration.seconds : 0
                let resumed = report.resumes > 0 ? ", \(report.resumes) resume\(report.resumes == 1 ? "" : "s")" : ""
                streams.out(
                    "updated \(device) with \(plan.image.name) (\(report.imageSize) bytes, CRC-32 \(Wording.hex32(report.imageCRC32))) in \(report.duration.humanReadable); sent \(Wording.bytes(report.bytesSent)) at \(Wording.rate(rate))\(resumed); ATT MTU \(report.link.attMTU), \(report.chunkSize)-byte chunks\n"
                )
            }
            return .success
        case .failure(let error):
            let code = ExitCode.forError(error)
            if plan.json {
                JSONRenderer(streams: streams).emit([
                    "event": .string("result"), "status": .string(code == .interrupted ? "paused" : "failed"),
                    "code": .string(error.code.description), "message": .string(error.message), "device": .string(device),
                ])
            }
            if code == .interrupted {
                streams.err("ota: interrupted: the device keeps what it received; run the same command again to continue or restart\n")
            } else {
                streams.err("ota: error: \(error.message)\n")
            }
            return code
        }
    }
}
