import Foundation
import OTACore
import OTAStorePostgreSQL
import OTAStoreSQLite
import OTATransportSimulator

/// `ota campaign create|run|status FILE|URI`: a fleet campaign kept in one SQLite file, or in a
/// PostgreSQL database that several gateways share, run on a simulated fleet through one
/// simulated adapter per gateway; stop it (Ctrl-C, or kill it) and run it again to go on.
enum CampaignCommand: Command {
    /// The actions, as `ota campaign ACTION` takes them.
    static let actions = ["create", "run", "status"]

    static let spec = CommandSpec(
        name: "campaign",
        summary:
            "Fleet campaigns: create one in a SQLite file or a PostgreSQL database, run it (on several gateways, again after a crash), show its progress.",
        options: [
            .init(name: "--protocol", valueName: "NAME", help: "create: the protocol that installs the image"),
            .init(name: "--sim-fleet", valueName: "N", help: "create: the campaign's devices, N simulated ones (sim:PROFILE/1 … N), 1...10000"),
            .init(name: "--sim-profile", valueName: "NAME", help: "create: their hardware profile (default nrf52840-mtu244-2m)"),
            .init(
                name: "--stages", valueName: "P%,…", help: "create: staged rollout, rising cumulative shares of the devices (default 100%; e.g. 5%,50%,100%)"),
            .init(
                name: "--stage-list", valueName: "FILE",
                help:
                    "create: staged rollout by groups: each FILE (one address or advertised name a line) is a stage, in order; the devices in none are the last (repeatable)",
                repeatable: true),
            .init(name: "--attempts", valueName: "N", help: "create: most attempts per device over the whole campaign, 1...100 (default 3)"),
            .init(name: "--abort-at", valueName: "P%", help: "create: stop when a stage's failed devices exceed this share (default 20%)"),
            .init(name: "--success", valueName: "P%", help: "create: share of a stage that must be updated before the next starts (default 90%)"),
            .init(name: "--name", valueName: "TEXT", help: "create: a name for people (default the image's file name)"),
            .init(
                name: "--target-family", valueName: "NAME", help: "create: take the discovered devices of this catalog family (repeatable: any of them)",
                repeatable: true),
            .init(
                name: "--target-name", valueName: "GLOB", help: "create: take the devices whose advertised name matches (* and ?; repeatable: any)",
                repeatable: true),
            .init(
                name: "--target-address", valueName: "GLOB", help: "create: take the devices whose address matches (* and ?; repeatable: any)",
                repeatable: true),
            .init(name: "--target-list", valueName: "FILE", help: "create: take the devices listed in FILE, one address or advertised name a line"),
            .init(name: "--min-rssi", valueName: "DBM", help: "create: take only devices heard at this signal or stronger, e.g. -75"),
            .init(
                name: "--catalog", valueName: "FILE", help: "create: device catalog to add to the built-in one, for --target-family (repeatable)",
                repeatable: true),
            .init(
                name: "--min-battery", valueName: "P%",
                help: "create: defer a device whose battery reads below this before any byte is written (not failed, no attempt spent)"),
            .init(
                name: "--window", valueName: "HH:MM-HH:MM",
                help: "create: start attempts only in these hours, UTC or with an offset (22:00-05:00+02:00); may cross midnight"),
            .init(name: "--adapter-limit", valueName: "K", help: "run: connections the simulated adapter holds at once, 1...64 (default 4)"),
            .init(
                name: "--sim-state", valueName: "DIR",
                help: "run: where the simulated devices' flash is kept (default FILE.devices beside FILE; needed with a URI, shared by its gateways)"),
            .init(name: "--lease", valueName: "SECONDS", help: "run: how long a device stays claimed without a heartbeat, 1...3600 (default 30)"),
            .init(name: "--seed", valueName: "N", help: "run: the simulation's seed (default 1)"),
            .init(
                name: "--gateway", valueName: "NAME",
                help: "run: who runs it, for its leases and the history; the same name takes back a killed run's leases at once (default HOST:PID)"),
            .init(name: "--json", help: "one JSON object per line: each attempt as it starts and ends, then the campaign"),
        ],
        positionals: [
            .init(name: "ACTION", help: "create, run or status"),
            .init(name: "FILE", help: "the campaign file (SQLite), or a postgres:// or postgresql:// URI (PostgreSQL)"),
            .init(name: "IMAGE", help: "create: the firmware file every device receives", isOptional: true),
        ],
        discussion: """
            A campaign file holds the plan, every device's state and attempts, and a history of
            every transition; each is committed before the campaign moves on, so a run that is
            stopped or killed at any point is continued by running it again: updated devices are
            not updated again, an attempt the stopped run left open counts as a failed attempt and
            is retried. Stages run in order; a stage whose failures exceed --abort-at, or that
            updates fewer than --success of its devices, stops the campaign (aborted).

            Several gateways share a campaign through PostgreSQL (FILE a postgres:// URI, decision
            0037): each claims a few devices at a time, leased to it (--gateway, unique per
            running gateway) for --lease seconds and renewed by a heartbeat while it updates them;
            a gateway killed mid-campaign leaves its devices to the others once their leases
            expire, and its open attempts count as failed. Simulated gateways share the devices
            through --sim-state DIR, each kept there before every answer it gives (decision
            0041): a device taken over resumes where it last acknowledged, by the protocol's
            own resume (generic cannot resume and starts over).

            Targets (decision 0044): create discovers the --sim-fleet devices through the
            simulator's discovery (each with its own name, lock-N, sensor-N or meter-N, RSSI and
            battery; a third of them charge as the run goes on) and keeps those every given
            --target-* and --min-rssi kind accepts (any entry of a kind; every kind given); the
            campaign records the criteria and why each device matched. No device matching is
            an error (exit 2).

            A device whose battery the preflight reads below --min-battery is deferred: not
            failed, no attempt spent, looked at again later in the run; one still low when the
            run ends is reported skipped (battery 12% < 30%). Skipped devices count as not updated
            for --success and not as failed for --abort-at; a stage short of --success only by
            skipped devices holds the campaign (still running) instead of aborting it.

            Outside --window a run starts nothing; once the window closes no attempt starts
            (those under way finish). Running again later goes on.

            Campaigns run on simulated fleets so far (decision 0035); real devices through BlueZ
            are not built yet.

            exit codes: 0 every device updated (status: campaign completed), 1 aborted or some
            device failed, 2 usage or no device matching the targets, 3 the campaign file, target
            list or image is missing, damaged or changed, 75 not finished, run again later
            (outside the window, the window closed, or devices skipped for their battery), 130
            interrupted (run again to go on)
            """
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let positionals = arguments.positionals
        do {
            guard actions.contains(positionals[0]) else {
                throw UsageError("unknown action '\(positionals[0])' (expected \(actions.joined(separator: ", ")))", command: "campaign")
            }
            guard positionals.count >= 2 else { throw UsageError("'ota campaign \(positionals[0])' needs the campaign FILE", command: "campaign") }
            let action = positionals[0]
            if action == "create" {
                guard positionals.count == 3 else { throw UsageError("'ota campaign create FILE IMAGE' needs the IMAGE", command: "campaign") }
            } else if positionals.count > 2 {
                throw UsageError("'ota campaign \(action)' takes no IMAGE", command: "campaign")
            }
            let createOnly = [
                "--protocol", "--sim-fleet", "--sim-profile", "--stages", "--stage-list", "--attempts", "--abort-at", "--success", "--name", "--target-family",
                "--target-name", "--target-address", "--target-list", "--min-rssi", "--catalog", "--min-battery", "--window",
            ]
            let runOnly = ["--adapter-limit", "--sim-state", "--lease", "--seed", "--gateway"]
            for option in createOnly where action != "create" && arguments.value(option) != nil {
                throw UsageError("\(option) applies to 'ota campaign create'", command: "campaign")
            }
            for option in runOnly where action != "run" && arguments.value(option) != nil {
                throw UsageError("\(option) applies to 'ota campaign run'", command: "campaign")
            }
            switch action {
            case "create": return try await create(arguments, file: positionals[1], image: positionals[2], streams: streams, environment: environment)
            case "run": return try await runCampaign(arguments, file: positionals[1], streams: streams, environment: environment)
            default: return try status(file: positionals[1], json: arguments.flag("--json"), streams: streams, clock: environment.campaignClock)
            }
        } catch {
            return UpdateCommand.fail(error, streams: streams)
        }
    }

    // MARK: - create

    private static func create(
        _ arguments: ParsedArguments, file: String, image path: String, streams: any OutputStreams, environment: ToolEnvironment
    ) async throws -> ExitCode {
        guard let protocolName = arguments.value("--protocol") else {
            throw UsageError(
                "'ota campaign create' needs --protocol NAME (\(environment.registry.inRegistrationOrder.map(\.name).joined(separator: ", ")))",
                command: "campaign")
        }
        guard let countText = arguments.value("--sim-fleet") else {
            throw UsageError(
                "'ota campaign create' needs --sim-fleet N: campaigns run on simulated fleets so far (real devices are not built yet)", command: "campaign")
        }
        _ = try UpdatePlan.integer(countText, option: "--sim-fleet", in: 1...10_000, command: "campaign")
        let attempts = try arguments.value("--attempts").map { text throws(UsageError) in
            try UpdatePlan.integer(text, option: "--attempts", in: 1...100, command: "campaign")
        }
        let groupFiles = arguments.values["--stage-list"] ?? []
        if !groupFiles.isEmpty, arguments.value("--stages") != nil {
            throw UsageError("--stages and --stage-list are two ways of making the stages: give one of them", command: "campaign")
        }
        let stages = try (arguments.value("--stages") ?? "100%").split(separator: ",", omittingEmptySubsequences: false).map {
            text throws(UsageError) in try percentage(String(text), option: "--stages") * 100
        }
        let abortAt = try arguments.value("--abort-at").map { text throws(UsageError) in try percentage(text, option: "--abort-at") } ?? 0.2
        let success = try arguments.value("--success").map { text throws(UsageError) in try percentage(text, option: "--success") } ?? 0.9
        let minimumBattery = try arguments.value("--min-battery").map { text throws(UsageError) in
            Int((try percentage(text, option: "--min-battery") * 100).rounded())
        }
        let window: CampaignWindow?
        let descriptor: ProtocolDescriptor
        let profile: DeviceProfile
        let selection = try targets(arguments)
        do throws(OTAError) {
            window = try arguments.value("--window").map { text throws(OTAError) in try CampaignWindow(parsing: text) }
            descriptor = try environment.registry.descriptor(named: protocolName)
            profile = try DeviceProfile.named(arguments.value("--sim-profile") ?? SimulatedCampaignFleet.defaultProfile)
        } catch {
            throw UsageError(error.message, command: "campaign")
        }
        let image = try loadImage(path, descriptor: descriptor, registry: environment.registry)
        guard image.count <= profile.slotSize else {
            throw OTAError(.imageTooLarge, "\(path) is \(image.count) bytes, larger than the \(profile.slotSize)-byte update slot of \(profile.name)")
        }
        var selected = try await discover(arguments, selection: selection, environment: environment)
        if let list = arguments.value("--target-list") {
            if !selected.unheardListEntries.isEmpty {
                let count = selected.unheardListEntries.count
                streams.err(
                    "ota campaign: note: \(entries(selected.unheardListEntries)) of \(MessageText.name(list)) \(count == 1 ? "was" : "were") not discovered: \(sample(selected.unheardListEntries))\n"
                )
            }
            selected.unheardListEntries = []
        }
        let addresses = selected.devices.map(\.address)
        let planned: [CampaignStage]
        if groupFiles.isEmpty {
            planned = try CampaignPlan.stages(of: addresses, endingAt: stages)
        } else {
            let groups = try groupFiles.map { path throws(OTAError) in try group(path) }
            let grouped = try CampaignPlan.stages(of: selected.devices, groups: groups)
            planned = grouped.stages
            if !grouped.unmatched.isEmpty {
                streams.err(
                    "ota campaign: note: \(entries(grouped.unmatched)) of the --stage-list files named no device the campaign took: \(sample(grouped.unmatched))\n"
                )
            }
        }
        let plan = try CampaignPlan(
            name: arguments.value("--name") ?? URL(fileURLWithPath: path).lastPathComponent, protocolName: descriptor.name,
            image: CampaignImage(path: URL(fileURLWithPath: path).standardizedFileURL.path, describing: image),
            stages: planned, maximumAttempts: attempts ?? 3, abortFailureRate: abortAt,
            successThreshold: success, selection: selected.record, minimumBattery: minimumBattery, window: window)
        let name: String
        if PostgreSQLCampaignStore.isURI(file) {
            name = try PostgreSQLCampaignStore.create(uri: file, plan: plan).label
        } else {
            _ = try SQLiteCampaignStore.create(at: file, plan: plan, leaseClock: environment.campaignClock)
            name = file
        }
        let devices = plan.devices.count
        if arguments.flag("--json") {
            var object: [String: JSONValue] = [
                "event": .string("created"), "campaign": .string(name), "devices": .number(Double(devices)), "stages": .number(Double(plan.stages.count)),
                "discovered": .number(Double(selected.record.discovered)), "targets": .string(selected.record.criteria),
                "selected": .array(
                    plan.devices.map { device in .object(["device": .string(device), "why": .string(selected.record.reasons[device] ?? "")]) }),
            ]
            if let minimumBattery { object["minBattery"] = .number(Double(minimumBattery)) }
            if let window { object["window"] = .string(window.description) }
            JSONRenderer(streams: streams).emit(object)
        } else {
            let chosen = selection.isEmpty ? "" : " (\(selected.record.criteria): \(devices) of \(selected.record.discovered) discovered)"
            streams.out(
                "created \(name): \(plan.name), \(devices) simulated \(profile.name) devices\(chosen) by \(descriptor.name) in \(plan.stages.count) stage\(plan.stages.count == 1 ? "" : "s") (\(plan.stages.map { "\($0.devices.count)" }.joined(separator: ", "))); run it with 'ota campaign run \(name)'\n"
            )
        }
        return .success
    }

    /// "1 entry", "3 entries": how many of a list file's entries a note is about.
    private static func entries(_ entries: [String]) -> String {
        "\(entries.count) entr\(entries.count == 1 ? "y" : "ies")"
    }

    /// The first five entries, made safe to print, and how many more there are.
    private static func sample(_ entries: [String]) -> String {
        entries.prefix(5).map(MessageText.name).joined(separator: ", ") + (entries.count > 5 ? " and \(entries.count - 5) more" : "")
    }

    /// The largest `--target-list` file read, in bytes (ten thousand devices take under 400 kB).
    static let maximumTargetListSize = 4 << 20

    /// A `--stage-list` file as a rollout group named after the file ("canary.txt": canary).
    ///
    /// - Throws: ``OTAError/Code/storage`` for a file that cannot be read (as a target list),
    ///   ``OTAError/Code/invalidParameter`` for one that lists no device.
    private static func group(_ path: String) throws(OTAError) -> CampaignGroup {
        let data = try BoundedFileRead.contents(
            of: URL(fileURLWithPath: path), limit: maximumTargetListSize, code: .storage, subject: "stage list \(MessageText.name(path))",
            largest: "the \(maximumTargetListSize) a stage list may have")
        let entries = try CampaignTargetSelection.listEntries(String(decoding: data, as: UTF8.self), source: path)
        return CampaignGroup(name: URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent, entries: entries)
    }

    /// The `--target-*` and `--min-rssi` criteria, checked.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a bad pattern or RSSI,
    ///   ``OTAError/Code/storage`` for a list file that cannot be read.
    private static func targets(_ arguments: ParsedArguments) throws(OTAError) -> CampaignTargetSelection {
        var selection = CampaignTargetSelection()
        selection.families = arguments.values["--target-family"] ?? []
        selection.namePatterns = try (arguments.values["--target-name"] ?? []).map { text throws(OTAError) in
            try CampaignTargetSelection.pattern(text, option: "--target-name")
        }
        selection.addressPatterns = try (arguments.values["--target-address"] ?? []).map { text throws(OTAError) in
            try CampaignTargetSelection.pattern(text, option: "--target-address")
        }
        if let text = arguments.value("--min-rssi") {
            guard let rssi = Int(text), (-127...20).contains(rssi) else {
                throw OTAError(.invalidParameter, "--min-rssi '\(MessageText.name(text))' is not a signal strength in dBm between -127 and 20 (e.g. -75)")
            }
            selection.minimumRSSI = rssi
        }
        if let path = arguments.value("--target-list") {
            // Read as every outside file is: bounded, a regular file (a FIFO would block).
            let data = try BoundedFileRead.contents(
                of: URL(fileURLWithPath: path), limit: maximumTargetListSize, code: .storage, subject: "target list \(MessageText.name(path))",
                largest: "the \(maximumTargetListSize) a target list may have")
            selection.list = try CampaignTargetSelection.listEntries(String(decoding: data, as: UTF8.self), source: path)
            selection.listSource = path
        }
        return selection
    }

    /// The devices the simulator's discovery finds for `--sim-fleet` (as `ota scan` hears the
    /// simulated fleet), selected by `selection` against the catalog.
    private static func discover(
        _ arguments: ParsedArguments, selection: CampaignTargetSelection, environment: ToolEnvironment
    ) async throws -> CampaignSelection {
        let catalog = try environment.catalog(adding: arguments.values["--catalog"] ?? [])
        let scanner: any DeviceScanner
        do throws(OTAError) {
            scanner = try environment.transports.provider(named: "sim").scanner(options: TransportOptions(arguments.values))
        } catch {
            throw UsageError(error.message, command: "campaign")
        }
        let heard = try await scanner.listen(for: .seconds(5))
        do throws(OTAError) {
            return try selection.select(from: heard, catalog: catalog)
        } catch {
            throw UsageError(error.message, command: "campaign")
        }
    }

    /// The campaign at `location`, a file or a PostgreSQL URI, and its name for messages (a URI's
    /// password masked).
    private static func open(_ location: String, clock: any CampaignLeaseClock) throws(OTAError) -> (store: any CampaignStore, name: String) {
        if PostgreSQLCampaignStore.isURI(location) {
            let store = try PostgreSQLCampaignStore.open(uri: location)
            return (store, store.label)
        }
        return (try SQLiteCampaignStore.open(location, leaseClock: clock), location)
    }

    /// "20%" or "20" → 0.2; 0 < share ≤ 100 %.
    private static func percentage(_ text: String, option: String) throws(UsageError) -> Double {
        let number = text.hasSuffix("%") ? String(text.dropLast()) : text
        guard let value = Double(number), value >= 0, value <= 100 else {
            throw UsageError("\(option) '\(text)' is not a percentage between 0% and 100%", command: "campaign")
        }
        return value / 100
    }

    /// The one image the campaign sends, prepared for its protocol.
    private static func loadImage(_ path: String, descriptor: ProtocolDescriptor, registry: ProtocolRegistry) throws(OTAError) -> FirmwareImage {
        let images = try UpdatePlan.loadImages(input: URL(fileURLWithPath: path), package: nil, descriptor: descriptor, registry: registry)
        guard images.count == 1, let image = images.first else {
            throw OTAError(.invalidImage, "\(path) holds \(images.count) images; a campaign sends one (multi-part packages are not supported in campaigns yet)")
        }
        return try descriptor.rawImagePreparation?.prepare(image) ?? image
    }

    // MARK: - run

    private static func runCampaign(
        _ arguments: ParsedArguments, file: String, streams: any OutputStreams, environment: ToolEnvironment
    ) async throws -> ExitCode {
        let limit = try arguments.value("--adapter-limit").map { text throws(UsageError) in
            try UpdatePlan.integer(text, option: "--adapter-limit", in: 1...64, command: "campaign")
        }
        let seed = try arguments.value("--seed").map { text throws(UsageError) in try SimulatorOptions.seed(text, command: "campaign") } ?? 1
        let lease = try arguments.value("--lease").map { text throws(UsageError) in
            try UpdatePlan.integer(text, option: "--lease", in: 1...3600, command: "campaign")
        }
        let json = arguments.flag("--json")
        let shared = PostgreSQLCampaignStore.isURI(file)
        guard !shared || arguments.value("--sim-state") != nil else {
            throw UsageError(
                "'ota campaign run' with a PostgreSQL URI needs --sim-state DIR: where the simulated devices are kept, shared by every gateway",
                command: "campaign")
        }
        let (store, name) = try open(file, clock: environment.campaignClock)
        let snapshot = try store.snapshot()
        let plan = snapshot.plan
        guard snapshot.phase == .running else {
            try render(snapshot, file: name, json: json, streams: streams)
            return exitCode(snapshot)
        }
        let descriptor: ProtocolDescriptor
        do throws(OTAError) {
            descriptor = try environment.registry.descriptor(named: plan.protocolName)
        } catch {
            throw OTAError(.storage, "\(name): the campaign's protocol '\(plan.protocolName)' is not in this build")
        }
        let image = try loadImage(plan.image.path, descriptor: descriptor, registry: environment.registry)
        guard plan.image.describes(image) else {
            throw OTAError(
                .invalidImage,
                "\(plan.image.path) changed since the campaign was created (SHA-256 \(plan.image.sha256.prefix(16))… expected); a campaign installs the image it was made with"
            )
        }
        let directory = URL(fileURLWithPath: arguments.value("--sim-state") ?? file + ".devices", isDirectory: true)
        let fleet = try SimulatedCampaignFleet(
            addresses: plan.devices, descriptor: descriptor, image: image, adapterLimit: limit ?? 4, seed: seed, directory: directory)
        // Unique per process by default: two runs under one name would take each other's leases.
        let gateway = arguments.value("--gateway") ?? "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
        let leaseDuration = Duration.seconds(lease ?? 30)
        let runner = CampaignRunner(
            engine: UpdateEngine(clock: fleet.simulation.clock), gateway: gateway, leaseClock: environment.campaignClock, lease: leaseDuration)
        // The leases are renewed on the wall clock, outside the simulation's virtual time.
        let heartbeat = Task { await CampaignHeartbeat(store: store, gateway: gateway, lease: leaseDuration).run() }
        defer { heartbeat.cancel() }
        if let window = plan.window, !window.contains(environment.campaignClock.now) {
            // Nothing to start: one line, before any device is made.
            let opens = window.opening(after: environment.campaignClock.now)
            let stop = CampaignRunStop.outsideWindow(window: window, opens: opens)
            if json {
                report(.stopped(stop, detail: stop.detail(snapshot)), json: true, streams: streams)
            } else {
                streams.err("ota campaign: \(name): \(stop.detail(snapshot)); run it again then\n")
            }
            return .tryLater
        }
        if !json {
            let left = snapshot.devices.filter { $0.state != .completed && $0.state != .failed }.count
            streams.out(
                "campaign \(plan.name): \(left) of \(plan.devices.count) devices to go, \(limit ?? 4) at a time through the simulated adapter of \(gateway)\n")
        }
        let result: CampaignRunResult
        do {
            result = try await fleet.simulation.run { () async throws -> CampaignRunResult in
                try await runner.execute(store, fleet: fleet) { event in report(event, json: json, streams: streams) }
            }
        } catch {
            let failure = OTAError.wrapping(error, context: "the campaign")
            guard failure.code == .cancelled else { throw failure }
            streams.err("ota: interrupted: the campaign is saved in \(name); run 'ota campaign run \(name)' again to go on\n")
            return .interrupted
        }
        try render(result.snapshot, file: name, json: json, streams: streams)
        return result.stop == nil ? exitCode(result.snapshot) : .tryLater
    }

    private static func report(_ event: CampaignRunner.Event, json: Bool, streams: any OutputStreams) {
        if json {
            var object: [String: JSONValue]
            switch event {
            case .round(let stage, let round, let devices):
                object = ["event": .string("round"), "stage": .number(Double(stage + 1)), "round": .number(Double(round)), "devices": .number(Double(devices))]
            case .started(let device, let attempt, let adapter):
                object = ["event": .string("started"), "device": .string(device), "attempt": .number(Double(attempt)), "adapter": .string(adapter)]
            case .finished(let device, let attempt, let outcome):
                object = ["event": .string("finished"), "device": .string(device), "attempt": .number(Double(attempt))]
                switch outcome {
                case .completed(let detail): object.merge(["state": .string("completed"), "detail": .string(detail)]) { $1 }
                case .failed(let message, let final):
                    object.merge(["state": .string(final ? "failed" : "retry"), "error": .string(message)]) { $1 }
                }
            case .deferred(let device, let attempt, let battery):
                object = [
                    "event": .string("deferred"), "device": .string(device), "attempt": .number(Double(attempt)),
                    "battery": .number(Double(battery.level)), "minBattery": .number(Double(battery.minimum)),
                ]
            case .stopped(let stop, let detail):
                object = ["event": .string("stopped"), "detail": .string(detail)]
                switch stop {
                case .outsideWindow(_, let opens):
                    object.merge(["reason": .string("outside-window"), "opens": .string(ISO8601DateFormatter().string(from: opens))]) { $1 }
                case .windowClosed(_, let opens):
                    object.merge(["reason": .string("window-closed"), "opens": .string(ISO8601DateFormatter().string(from: opens))]) { $1 }
                case .batteryHeld:
                    object["reason"] = .string("battery")
                }
            case .ended(let phase, let detail):
                object = ["event": .string("ended"), "phase": .string(phase.rawValue), "detail": .string(detail)]
            }
            JSONRenderer(streams: streams).emit(object)
            return
        }
        switch event {
        case .round(let stage, let round, let devices):
            streams.out("stage \(stage + 1), batch \(round): \(devices) device\(devices == 1 ? "" : "s") claimed\n")
        case .finished(let device, let attempt, .failed(let message, let final)):
            streams.out("  \(device): attempt \(attempt) failed\(final ? " (its last)" : ""): \(message)\n")
        case .deferred(let device, let attempt, let battery):
            streams.out("  \(device): deferred before attempt \(attempt) (\(battery.summary)); no attempt spent\n")
        case .stopped(_, let detail):
            streams.out("campaign paused: \(detail)\n")
        case .ended(let phase, let detail):
            streams.out("campaign \(phase.rawValue): \(detail)\n")
        default:
            break
        }
    }

    // MARK: - status

    private static func status(file: String, json: Bool, streams: any OutputStreams, clock: any CampaignLeaseClock) throws(OTAError) -> ExitCode {
        let (store, name) = try open(file, clock: clock)
        let snapshot = try store.snapshot()
        try render(snapshot, file: name, json: json, streams: streams)
        return snapshot.phase == .running ? .success : exitCode(snapshot)
    }

    private static func render(_ snapshot: CampaignSnapshot, file: String, json: Bool, streams: any OutputStreams) throws(OTAError) {
        let stages = snapshot.stages
        if json {
            let stageObjects: [JSONValue] = stages.map { stage in
                .object([
                    "name": .string(stage.name), "devices": .number(Double(stage.devices)), "completed": .number(Double(stage.completed)),
                    "failed": .number(Double(stage.failed)), "remaining": .number(Double(stage.remaining)),
                    "skipped": .number(Double(stage.deferred)),
                ])
            }
            let skippedObjects: [JSONValue] = snapshot.devices.filter { $0.state == .deferred }.map { device in
                var object: [String: JSONValue] = ["device": .string(device.address), "detail": .string(skipped(device, plan: snapshot.plan))]
                if let level = device.battery { object["battery"] = .number(Double(level)) }
                if let minimum = snapshot.plan.minimumBattery { object["minBattery"] = .number(Double(minimum)) }
                return .object(object)
            }
            let failedObjects: [JSONValue] = snapshot.devices.filter { $0.state == .failed }.map { device in
                .object(["device": .string(device.address), "attempts": .number(Double(device.attempts)), "error": .string(device.lastError ?? "")])
            }
            var object: [String: JSONValue] = ["event": .string("campaign"), "campaign": .string(file), "name": .string(snapshot.plan.name)]
            object["phase"] = .string(snapshot.phase.rawValue)
            if let detail = snapshot.phaseDetail { object["detail"] = .string(detail) }
            object["protocol"] = .string(snapshot.plan.protocolName)
            object["devices"] = .number(Double(snapshot.devices.count))
            object["stages"] = .array(stageObjects)
            object["failedDevices"] = .array(failedObjects)
            object["skippedDevices"] = .array(skippedObjects)
            if let selection = snapshot.plan.selection {
                object["targets"] = .string(selection.criteria)
                object["discovered"] = .number(Double(selection.discovered))
            }
            if let minimum = snapshot.plan.minimumBattery { object["minBattery"] = .number(Double(minimum)) }
            if let window = snapshot.plan.window { object["window"] = .string(window.description) }
            JSONRenderer(streams: streams).emit(object)
            return
        }
        streams.out(
            "\(file): \(snapshot.plan.name) by \(snapshot.plan.protocolName), \(snapshot.phase.rawValue)\(snapshot.phaseDetail.map { ": \($0)" } ?? "")\n")
        if let selection = snapshot.plan.selection {
            streams.out("  targets: \(selection.criteria) (\(snapshot.devices.count) of \(selection.discovered) discovered)\n")
        }
        if snapshot.plan.minimumBattery != nil || snapshot.plan.window != nil {
            let battery = snapshot.plan.minimumBattery.map { "battery at least \($0)%" }
            let window = snapshot.plan.window.map { "attempts start \($0)" }
            streams.out("  gates: \([battery, window].compactMap { $0 }.joined(separator: ", "))\n")
        }
        for stage in stages {
            let skipped = stage.deferred > 0 ? ", \(stage.deferred) skipped for battery" : ""
            streams.out(
                "  stage \(stage.name): \(stage.completed) updated, \(stage.failed) failed\(skipped), \(stage.remaining - stage.deferred) to go (of \(stage.devices))\n"
            )
        }
        for device in snapshot.devices where device.state == .failed {
            streams.out("  failed: \(device.address) after \(device.attempts) attempt\(device.attempts == 1 ? "" : "s"): \(device.lastError ?? "")\n")
        }
        for device in snapshot.devices where device.state == .deferred {
            streams.out("  \(device.address): \(skipped(device, plan: snapshot.plan))\n")
        }
    }

    /// "skipped (battery 12% < 30%)": a device deferred for its battery, as reports show it.
    private static func skipped(_ device: CampaignDeviceRecord, plan: CampaignPlan) -> String {
        guard let level = device.battery, let minimum = plan.minimumBattery else { return "skipped (battery low)" }
        return "skipped (\(BatteryBelowMinimum(level: level, minimum: minimum).summary))"
    }

    private static func exitCode(_ snapshot: CampaignSnapshot) -> ExitCode {
        snapshot.phase == .completed && snapshot.devices.allSatisfy { $0.state == .completed } ? .success : .updateFailed
    }
}
