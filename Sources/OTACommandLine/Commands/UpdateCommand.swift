import Foundation
import OTACore

/// `ota update FIRMWARE`: send an image or a firmware package to a device.
enum UpdateCommand: Command {
    static let spec = CommandSpec(
        name: "update",
        summary: "Send a firmware image or package to a device and wait for the device to accept it.",
        options: CommandSpec.Option.deviceTarget(
            protocolHelp: "update protocol (see 'ota protocols'); default: chosen by the package or the device catalog",
            deviceNote: " (see 'ota scan', 'ota devices')",
            linkOptions: [
                .init(
                    name: "--write-path", valueName: "PATH",
                    help:
                        "real devices: 'auto' (default: AcquireWrite socket, or write requests when bluetoothd's EATT could reorder write commands), 'acquire' (the socket even then), 'writevalue' (one D-Bus call per packet, to compare) or 'request' (write requests, in order)"
                ),
                .init(
                    name: "--socket-buffer", valueName: "BYTES",
                    help:
                        "real devices: send buffer of the AcquireWrite socket (bounds what waits in it unread by bluetoothd); default 4096 (8192 once Linux doubles it), 'system' for the kernel's"
                ),
                .init(
                    name: "--in-flight", valueName: "BYTES",
                    help:
                        "real devices: most bytes of data writes on their way to the device before a delivery receipt shows them received (progress runs at most this far ahead), 1024...16777216; default 16384, 'off' to trust bluetoothd's queue"
                ),
                .init(
                    name: "--pairing", valueName: "WHEN",
                    help:
                        "real devices: 'auto' (default: bluetoothd pairs through the system's agent if the device asks), 'first' (pair with ota's own agent before the update; Just Works, or Passkey Entry with --passkey or the passkey the device shows, asked on a terminal) or 'once' (pair first, remove the bond afterwards); default a catalog family's pairing"
                ),
                .init(
                    name: "--passkey", valueName: "DIGITS",
                    help: "real devices: the six-digit passkey to enter when pairing (Passkey Entry); implies --pairing first"
                ),
            ],
            parameterNote: " (see 'ota protocols')"
        ) + [
            .init(name: "--catalog", valueName: "FILE", help: "device catalog to add to the built-in one, repeatable (see docs/manifest.md)", repeatable: true),
            .init(name: "--dry-run", help: "print which protocol would be used and why, without connecting"),
            .init(name: "--json", help: "print one JSON event per line on standard output"),
            .init(name: "--mtu", valueName: "BYTES", help: "simulated devices: ATT MTU the app offers, 23...517; default 517 (BlueZ negotiates its own)"),
            .init(
                name: "--max-chunk", valueName: "BYTES",
                help: "largest payload per data write, 1...512; default what the link carries (or the catalog family's maxChunk)"),
            .init(name: "--resume-attempts", valueName: "N", help: "reconnections in a row without progress before giving up, 0...100 (0: never); default 5"),
            .init(
                name: "--min-battery", valueName: "PERCENT",
                help: "refuse before the first write when the device's battery is below this, 0...100; default off (or the catalog family's minBattery)"),
            .init(name: "--force", help: "update despite a low battery or a hardware revision the firmware does not declare, saying so"),
            .init(name: "--allow-downgrade", help: "install firmware older than the version the device reports running"),
            .init(
                name: "--key", valueName: "FILE",
                help: "a public key (PEM) the firmware must be signed with, checked before connecting; repeatable (or a family's keys)", repeatable: true),
            .init(
                name: "--trace", valueName: "FILE",
                help: "record every link operation and notification to FILE as JSON lines, for a bug report or --device replay:FILE (docs/trace.md)"),
            .init(name: "--trace-data", help: "with --trace: keep the bytes of writes without response too (they carry the image; default length and CRC-32)"),
        ] + SimulatorOptions.specOptions,
        positionals: [
            .init(name: "FIRMWARE", help: "a firmware image (.bin), a package directory with manifest.json, or a Nordic DFU .zip (nordic-dfu)")
        ],
        discussion: """
            The protocol comes from --protocol, else from the package's manifest, else from the device
            family the catalog matches; sources that disagree are an error. A package is verified
            (sizes, SHA-256, compatibility with the device's family) before anything connects.

            Progress goes to standard error (a bar on a terminal, plain lines otherwise); the result
            goes to standard output. Ctrl-C pauses: the device keeps what it received, and running
            the same command again continues or restarts, as the protocol allows. Resumable protocols
            (framed) reconnect by themselves after a lost link. Simulated devices start with erased
            flash unless --sim-state keeps them between runs.

            exit codes: 0 updated, 1 device refused the image, 2 usage, 3 bad firmware or manifest,
            4 device unavailable, 5 link lost or timed out, 70 a bug in ota, 130 interrupted
            """
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let plan: UpdatePlan
        let json = arguments.flag("--json")
        do {
            let interactive = streams.errorIsTerminal && !json
            plan = try await UpdatePlan.make(
                arguments, environment: environment, command: "update", interactive: interactive,
                askPerson: json ? nil : TerminalPrompt.asker(streams: streams))
        } catch {
            let code = fail(error, streams: streams)
            if json {
                // A refusal before connecting still ends the event stream with its result.
                let otaError = error as? OTAError
                JSONRenderer(streams: streams).emit([
                    "event": .string("result"), "status": .string("failed"), "time": .number(0),
                    "code": .string(otaError?.code.description ?? (error is UsageError ? "usage" : "internal")),
                    "message": .string(otaError?.message ?? (error as? UsageError)?.description ?? "\(error)"),
                    "device": .string(arguments.value("--device") ?? environment.defaultDevice),
                ])
            }
            return code
        }
        if arguments.flag("--dry-run") {
            if json {
                JSONRenderer(streams: streams).emit(plan.jsonPlan)
            } else {
                for line in plan.explanation { streams.out(line + "\n") }
            }
            return .success
        }
        if !json {
            for note in plan.signatureNotes { streams.err("signature: \(note)\n") }
        }
        // The update's random choices (a bootloader's name): the device's seed when its transport
        // repeats exactly; a recorded update draws one, so that its replay makes the same.
        let randomSeed = plan.device.randomSeed ?? (arguments.value("--trace") == nil ? nil : UInt64.random(in: 0...UInt64.max))
        let trace: TraceRecorder?
        do throws(OTAError) {
            trace = try arguments.value("--trace").map { path throws(OTAError) in
                try TraceRecorder(url: URL(fileURLWithPath: path), header: traceHeader(plan, arguments: arguments, randomSeed: randomSeed))
            }
        } catch {
            return fail(error, streams: streams)
        }
        let code = await execute(plan, json: arguments.flag("--json"), streams: streams, trace: trace, randomSeed: randomSeed)
        do {
            try trace?.finish()
        } catch {
            streams.err("ota: error: \(error.message)\n")
            return code == .success ? ExitCode.forError(error) : code
        }
        return code
    }

    /// What a trace of this update says it recorded.
    static func traceHeader(_ plan: UpdatePlan, arguments: ParsedArguments, randomSeed: UInt64?) -> TraceHeader {
        TraceHeader(
            command: (["ota", "update"] + arguments.words).joined(separator: " "), device: plan.device.address, protocolName: plan.selection.protocolName,
            images: plan.images.map(TraceImage.init),
            keepsData: arguments.flag("--trace-data"), randomSeed: randomSeed
        )
    }

    static func fail(_ error: any Error, streams: any OutputStreams) -> ExitCode {
        switch error {
        case let error as UsageError:
            streams.err("ota: error: \(error)\n")
            return .usage
        case let error as OTAError:
            streams.err("ota: error: \(error.message)\n")
            return ExitCode.forError(error)
        default:
            streams.err("ota: error: \(error)\n")
            return .internalError
        }
    }

    /// Sends the plan's images through a session of its device's transport.
    static func execute(
        _ plan: UpdatePlan, json: Bool, streams: any OutputStreams, trace: TraceRecorder? = nil, randomSeed: UInt64? = nil
    ) async -> ExitCode {
        let request = SessionRequest(
            protocolName: plan.selection.protocolName, imageSize: plan.images.reduce(0) { $0 + $1.count }, offeredMTU: plan.mtu,
            pairing: plan.pairing
        )
        var code: ExitCode?
        do throws(OTAError) {
            try await plan.device.withSession(request) { session in
                trace?.start(clock: session.clock)
                let connector = trace.map { TracingConnector(session.connector, recorder: $0, executor: session.executor) } ?? session.connector
                var part = 0
                code = await sendParts(plan, json: json, streams: streams, trace: trace) { image, renderer in
                    var configuration = plan.configuration(forPart: part)
                    configuration.randomSeed = randomSeed
                    let engine = UpdateEngine(configuration: configuration, clock: session.clock)
                    part += 1
                    do throws(OTAError) {
                        return try await session.run { () async throws(OTAError) in
                            await update(image, plan: plan, engine: engine, connector: connector, renderer: renderer, executor: session.executor)
                        }
                    } catch {
                        return (.failure(error), .zero)
                    }
                } between: {
                    // The device restarts into what it just received before taking the next part.
                    try await session.waitForRestart()
                }
            }
        } catch {
            // Failing to open the session is the error; failing to close it (saving a simulated
            // device, a replay that differs from its recording) is reported after the update's
            // own outcome, and an update that succeeded then exits with the closing failure's code.
            guard let code else { return fail(error, streams: streams) }
            streams.err("ota: error: \(error.message)\n")
            return code == .success ? ExitCode.forError(error) : code
        }
        return code ?? .internalError
    }

    /// Sends each part in turn with its own progress display; stops at the first failure.
    private static func sendParts(
        _ plan: UpdatePlan,
        json: Bool,
        streams: any OutputStreams,
        trace: TraceRecorder?,
        send: (FirmwareImage, any EventRenderer) async -> (Result<UpdateReport, OTAError>, Duration),
        between: () async throws -> Void
    ) async -> ExitCode {
        var exitCode = ExitCode.success
        for (index, image) in plan.images.enumerated() {
            if plan.images.count > 1, !json {
                streams.err("part \(index + 1) of \(plan.images.count): \(image.name)\n")
            }
            let renderer: any EventRenderer =
                if json { JSONRenderer(streams: streams) } else if streams.errorIsTerminal { ProgressBarRenderer(streams: streams) } else {
                    LineRenderer(streams: streams)
                }
            let (result, time) = await send(image, renderer)
            trace?.record(.result) { record in
                record.time = time.seconds
                switch result {
                case .success: record.status = "completed"
                case .failure(let error):
                    record.status = "failed"
                    record.error = TraceError(error)
                }
            }
            exitCode = report(result, time: time, image: image, plan: plan, json: json, streams: streams)
            if exitCode != .success { break }
            if index + 1 < plan.images.count {
                do { try await between() } catch { return .interrupted }
            }
        }
        return exitCode
    }

    /// One update with its events rendered, and the time of its last event (for the result). The
    /// renderer runs in its own task, not a child: on Ctrl-C the update is cancelled, but its last
    /// events (paused, and why) must still be shown.
    private static func update(
        _ image: FirmwareImage,
        plan: UpdatePlan,
        engine: UpdateEngine,
        connector: any Connector,
        renderer: any EventRenderer,
        executor: (any TaskExecutor)?
    ) async -> (Result<UpdateReport, OTAError>, Duration) {
        let (events, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
        let rendering = Task(executorPreference: executor) {
            var renderer = renderer
            var last = Duration.zero
            for await event in events {
                renderer.render(event)
                last = event.time
            }
            renderer.finish()
            return last
        }
        let result: Result<UpdateReport, OTAError>
        do throws(OTAError) {
            result = .success(try await engine.update(image, using: plan.client, connector: connector, events: sink))
        } catch {
            result = .failure(error)
        }
        return (result, await rendering.value)
    }

    private static func report(
        _ result: Result<UpdateReport, OTAError>,
        time: Duration,
        image: FirmwareImage,
        plan: UpdatePlan,
        json: Bool,
        streams: any OutputStreams
    ) -> ExitCode {
        let device = plan.device.address
        switch result {
        case .success(let report):
            if json {
                JSONRenderer(streams: streams).emit([
                    "event": .string("result"), "status": .string("completed"), "device": .string(device), "time": .number(time.seconds),
                    "protocol": .string(plan.selection.protocolName), "imageSize": .number(Double(report.imageSize)),
                    "imageCRC32": .string(Hex.number(report.imageCRC32, digits: 8)), "duration": .number(report.duration.seconds),
                    "goodput": .number(report.goodput.rounded()), "attMTU": .number(Double(report.link.attMTU)),
                    "transferDuration": .number(report.transferDuration.seconds), "transferRate": .number(report.transferRate.rounded()),
                    "bytesSent": .number(Double(report.bytesSent)), "resumes": .number(Double(report.resumes)),
                    "restarts": .number(Double(report.restarts)),
                    "chunkSize": .number(Double(report.chunkSize)),
                ])
            } else {
                let rate = report.protocolDuration > .zero ? Double(report.bytesSent) / report.protocolDuration.seconds : 0
                let resumed =
                    (report.resumes > 0 ? ", \(report.resumes) resume\(report.resumes == 1 ? "" : "s")" : "")
                    + (report.restarts > 0 ? ", \(report.restarts) restart\(report.restarts == 1 ? "" : "s") from byte 0" : "")
                streams.out(
                    "updated \(device) with \(image.name) (\(report.imageSize) bytes, CRC-32 \(Hex.number(report.imageCRC32, digits: 8))) over \(plan.selection.protocolName) in \(report.duration.humanReadable); sent \(Wording.bytes(report.bytesSent)), average \(Wording.rate(rate)), transfer \(Wording.rate(report.transferRate)) (first data to the verdict, \(report.transferDuration.humanReadable))\(resumed); ATT MTU \(report.link.attMTU), \(report.chunkSize)-byte chunks\n"
                )
            }
            return .success
        case .failure(let error):
            let code = ExitCode.forError(error)
            if json {
                JSONRenderer(streams: streams).emit([
                    "event": .string("result"), "status": .string(code == .interrupted ? "paused" : "failed"),
                    "code": .string(error.code.description), "message": .string(error.message), "device": .string(device),
                    "time": .number(time.seconds),
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
