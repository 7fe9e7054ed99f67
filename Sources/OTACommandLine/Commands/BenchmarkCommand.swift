import Foundation
import OTACore
import OTATransportSimulator

/// `ota benchmark`: updates an image on every simulated profile and reports goodput against the
/// modelled link's capacity, with the host's wall and CPU time.
enum BenchmarkCommand: Command {
    static let spec = CommandSpec(
        name: "benchmark",
        summary: "Measure update goodput on every simulated device profile against the link's capacity.",
        options: [
            .init(name: "--protocol", valueName: "NAME", help: "protocol to measure, repeatable; default: every protocol", repeatable: true),
            .init(name: "--profile", valueName: "NAME", help: "profile to measure, repeatable; default: every profile", repeatable: true),
            .init(name: "--size", valueName: "BYTES", help: "image size, e.g. 200000, 200K, 10M (decimal units); default 200K"),
            .init(name: "--seed", valueName: "N", help: "simulation seed; default 1"),
            .init(
                name: "--param", valueName: "KEY=VALUE",
                help: "with one --protocol: measure its first stock variant with this parameter changed, instead of every variant, repeatable",
                repeatable: true
            ),
            .init(name: "--json", help: "print one JSON object per row (\"skipped\" where the slot cannot hold the image)"),
            .init(
                name: "--scale", valueName: "N",
                help: "run N updates at once in one simulation per protocol and profile; report wall, CPU and peak RSS per update (1...10000)"
            ),
            .init(
                name: "--adapter-limit", valueName: "K",
                help: "with --scale: the N updates share one simulated adapter of K connections and its airtime, scheduled by the fleet scheduler (1...64)"
            ),
        ],
        discussion: """
            Virtual time is the simulated link's and device's; wall and CPU time are this host's cost
            of simulating, per megabyte of image. Goodput counts from link-up to the device's verdict
            (every command round trip and flash wait included, connection setup not). Capacity is the
            modelled link's one-way ATT goodput with the negotiated write length, so chunk headers
            count against goodput; 'headers' is their share of each write and 'notifs' the
            acknowledgements and replies the device sent (see docs/benchmarks.md).
            With --scale N, N simulated devices of the profile each receive the image at the same
            time, in one process and one virtual clock; the row says how many flashes hold the image
            byte for byte ('identical'), the longest update's virtual time, and the host's wall time,
            CPU time and peak resident memory divided by N.
            With --adapter-limit K as well, the N devices are updated through one simulated adapter
            that holds K connections and whose links share one radio (FleetScheduler, decision 0031):
            'virtual' is then the whole campaign's, 'peak' the adapter's most connections at once and
            'ideal' the campaign's virtual time over the larger of its airtime and connection bounds.
            With --param, the one protocol named by --protocol is measured once: its first stock
            variant with the parameters given changed (see 'ota protocols'), e.g. --protocol mcumgr
            --param buffer-size=2475. A measurement is one connection, so a parameter that makes the
            device reset during the update (mcumgr's mode=test) fails here.
            Build in release mode for meaningful host figures: swift run -c release ota benchmark
            """
    )

    struct Measurement: Sendable {
        var protocolName: String
        var variant: ProtocolParameters
        var profile: DeviceProfile
        var report: UpdateReport
        var capacity: Double
        var host: HostCost
        var stats: LinkStatistics

        var ratio: Double { report.goodput / capacity }

        /// Share of each data write taken by the protocol's chunk header.
        var headerOverhead: Double {
            let write = report.link.maximumWriteWithoutResponse
            return write > 0 ? Double(write - report.chunkSize) / Double(write) : 0
        }
    }

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let descriptors: [ProtocolDescriptor]
        let profiles: [DeviceProfile]
        let size: Int
        let seed: UInt64
        var scale: Int?
        var adapterLimit: Int?
        let variants: (ProtocolDescriptor) -> [ProtocolParameters]
        do {
            descriptors = try environment.registry.selected(by: arguments, command: "benchmark")
            variants = try chosenVariants(arguments, descriptors: descriptors)
            var selectedProfiles: [DeviceProfile] = []
            for name in arguments.values["--profile"] ?? DeviceProfile.builtIn.map(\.name) {
                do { selectedProfiles.append(try DeviceProfile.named(name)) } catch { throw UsageError(error.message, command: "benchmark") }
            }
            profiles = selectedProfiles
            size = try parseSize(arguments.value("--size") ?? "200K")
            seed = try SimulatorOptions.seed(arguments.value("--seed") ?? "1", command: "benchmark")
            if let text = arguments.value("--scale") {
                guard let count = Int(text), (1...10_000).contains(count) else {
                    throw UsageError("--scale '\(text)' is not a number of updates between 1 and 10000", command: "benchmark")
                }
                scale = count
            }
            if let text = arguments.value("--adapter-limit") {
                guard let limit = Int(text), (1...64).contains(limit) else {
                    throw UsageError("--adapter-limit '\(text)' is not a number of connections between 1 and 64", command: "benchmark")
                }
                guard scale != nil else { throw UsageError("--adapter-limit needs --scale N", command: "benchmark") }
                adapterLimit = limit
            }
            // A row whose slot cannot hold the image is reported skipped; when no selected
            // profile can hold it there is nothing to measure, which is the arguments' fault.
            if let largest = profiles.max(by: { $0.slotSize < $1.slotSize }), size > largest.slotSize {
                let which = profiles.count == 1 ? "\(largest.name)'s slot" : "the largest selected slot (\(largest.name))"
                throw UsageError(
                    "--size \(arguments.value("--size") ?? "") (\(size) bytes) does not fit \(which), which holds \(largest.slotSize) bytes",
                    command: "benchmark")
            }
        } catch {
            streams.err("ota: error: \(error)\n")
            return .usage
        }
        let json = arguments.flag("--json")
        let image: FirmwareImage
        do {
            image = try FirmwareImage(bytes: pseudoRandomBytes(size, seed: seed), name: "benchmark-\(size).bin")
        } catch {
            streams.err("ota: error: \(error.message)\n")
            return .badInput
        }
        if let scale {
            return await runScaled(
                scale, adapterLimit: adapterLimit, descriptors: descriptors, variants: variants, profiles: profiles, image: image, seed: seed, json: json,
                streams: streams
            )
        }
        let table = columns.fitting(
            descriptors.flatMap { descriptor in variants(descriptor).map { label(descriptor.name, $0) } }, inColumn: 0)
        if !json {
            streams.out("ota benchmark: \(size)-byte pseudo-random image, seed \(seed), \(buildMode) build\n")
            streams.out("virtual = simulated link and device time; wall, CPU = this host's cost per MB of image\n\n")
            streams.out(table.headerRow + "\n")
        }
        var failed = false
        var measured: [Measurement] = []
        for descriptor in descriptors {
            for variant in variants(descriptor) {
                for profile in profiles {
                    guard image.count <= profile.slotSize else {
                        streams.out(skippedRow(descriptor.name, variant: variant, profile: profile, image: image, json: json, table: table))
                        continue
                    }
                    do {
                        let measurement = try await measure(descriptor, variant: variant, profile: profile, image: image, seed: seed)
                        measured.append(measurement)
                        streams.out((json ? jsonLine(measurement) : textRow(measurement, table)) + "\n")
                    } catch {
                        failed = true
                        streams.err("ota: error: \(label(descriptor.name, variant)) on \(profile.name): \(error)\n")
                    }
                }
            }
        }
        if !json, arguments.values["--param"] == nil, let nordic = descriptors.first(where: { $0.name == NordicBenchmark.protocolName }) {
            await NordicBenchmark.report(nordic, measured: measured, profiles: profiles, image: image, seed: seed, streams: streams)
        }
        return failed ? .updateFailed : .success
    }

    /// The parameter sets to measure per protocol: its stock variants, or with `--param` the first
    /// of them with the given parameters changed (one protocol only, checked against its declared
    /// parameters up front).
    static func chosenVariants(
        _ arguments: ParsedArguments, descriptors: [ProtocolDescriptor]
    ) throws(UsageError) -> (ProtocolDescriptor) -> [ProtocolParameters] {
        guard arguments.values["--param"] != nil else { return { $0.parameterVariants } }
        guard (arguments.values["--protocol"] ?? []).count == 1, let descriptor = descriptors.first else {
            throw UsageError("--param needs exactly one --protocol: parameters belong to one protocol", command: "benchmark")
        }
        var parameters = descriptor.parameterVariants.first ?? [:]
        for (key, value) in try UpdatePlan.parameters(arguments, command: "benchmark").values { parameters[key] = value }
        do {
            _ = try descriptor.makeClient(parameters)
            _ = try descriptor.makeDeviceModel(parameters)
        } catch {
            throw UsageError(error.message, command: "benchmark")
        }
        return { _ in [parameters] }
    }

    // MARK: - --scale

    struct ScaledMeasurement: Sendable {
        var label: String
        var profile: DeviceProfile
        var count: Int
        var identical: Int
        var longest: Duration
        var host: HostCost
        var peakResidentBytes: Int
        /// With an adapter: its limit, its measured peak, and virtual time over the ideal.
        var adapter: (limit: Int, peak: Int, overIdeal: Double)?
    }

    private static func runScaled(
        _ count: Int, adapterLimit: Int?, descriptors: [ProtocolDescriptor], variants: (ProtocolDescriptor) -> [ProtocolParameters],
        profiles: [DeviceProfile], image: FirmwareImage, seed: UInt64, json: Bool, streams: any OutputStreams
    ) async -> ExitCode {
        let adapterColumns = adapterLimit == nil ? [] : ["peak", "ideal"]
        let table = TextTable(
            ["protocol", "profile", "updates", "identical", "virtual", "wall/update", "CPU/update", "RSS/update"] + adapterColumns,
            minimumWidths: [17, 20, 7, 10, 10, 12, 12, 12, 6, 7]
        ).fitting(descriptors.flatMap { descriptor in variants(descriptor).map { label(descriptor.name, $0) } }, inColumn: 0)
        if !json {
            streams.out("ota benchmark --scale \(count): \(image.count)-byte pseudo-random image, seed \(seed), \(buildMode) build\n")
            if let adapterLimit {
                streams.out(
                    "through one simulated adapter of \(adapterLimit) connections sharing its airtime: virtual = the whole campaign; peak = the adapter's most connections at once\n"
                )
            }
            streams.out("per update = this host's wall time, CPU time and peak resident memory of the process divided by \(count)\n\n")
            streams.out(table.headerRow + "\n")
        }
        var failed = false
        for descriptor in descriptors {
            for variant in variants(descriptor) {
                for profile in profiles {
                    guard image.count <= profile.slotSize else {
                        streams.out(skippedRow(descriptor.name, variant: variant, profile: profile, image: image, json: json, table: table))
                        continue
                    }
                    do {
                        let m = try await measureScaled(
                            descriptor, variant: variant, profile: profile, image: image, seed: seed, count: count, adapterLimit: adapterLimit
                        )
                        if m.identical != m.count { failed = true }
                        if let adapter = m.adapter, adapter.peak > adapter.limit { failed = true }
                        if json {
                            var fields: [String: JSONValue] = [
                                "variant": .string(m.label), "profile": .string(m.profile.name), "updates": .number(Double(m.count)),
                                "identical": .number(Double(m.identical)), "longestVirtualSeconds": .number(m.longest.seconds),
                                "wallSecondsPerUpdate": .number(m.host.wall.seconds / Double(m.count)),
                                "cpuSecondsPerUpdate": .number(m.host.cpu.seconds / Double(m.count)),
                                "peakResidentBytes": .number(Double(m.peakResidentBytes)),
                            ]
                            if let adapter = m.adapter {
                                fields["adapterLimit"] = .number(Double(adapter.limit))
                                fields["adapterPeakConnections"] = .number(Double(adapter.peak))
                                fields["virtualOverIdeal"] = .number(adapter.overIdeal)
                            }
                            streams.out(JSONValue.object(fields).serialized + "\n")
                        } else {
                            streams.out(
                                table.row(
                                    [
                                        m.label, m.profile.name, "\(m.count)", "\(m.identical)/\(m.count)", virtualCell(m.longest),
                                        String(oneDecimal: m.host.wall.seconds * 1000 / Double(m.count)) + " ms",
                                        String(oneDecimal: m.host.cpu.seconds * 1000 / Double(m.count)) + " ms",
                                        String(oneDecimal: Double(m.peakResidentBytes) / Double(m.count) / 1000) + " kB",
                                    ] + (m.adapter.map { ["\($0.peak)/\($0.limit)", String(format: "%.3f×", $0.overIdeal)] } ?? [])
                                ) + "\n"
                            )
                        }
                    } catch {
                        failed = true
                        streams.err("ota: error: \(label(descriptor.name, variant)) on \(profile.name), \(count) at once: \(error)\n")
                    }
                }
            }
        }
        if !json {
            streams.out("\npeak resident memory of the whole process: \(String(oneDecimal: Double(peakResidentBytes()) / 1_000_000)) MB\n")
        }
        return failed ? .updateFailed : .success
    }

    /// `count` devices of `profile` updated at once in one simulation; each flash is then
    /// compared with the image.
    static func measureScaled(
        _ descriptor: ProtocolDescriptor, variant: ProtocolParameters, profile: DeviceProfile, image raw: FirmwareImage, seed: UInt64, count: Int,
        adapterLimit: Int? = nil
    ) async throws -> ScaledMeasurement {
        if let adapterLimit {
            return try await measureThroughAdapter(
                descriptor, variant: variant, profile: profile, image: raw, seed: seed, count: count, limit: adapterLimit
            )
        }
        let simulation = Simulation(seed: seed)
        var devices: [SimulatedDevice] = []
        for _ in 0..<count {
            devices.append(SimulatedDevice(profile: profile, model: try descriptor.makeDeviceModel(variant), simulation: simulation))
        }
        let client = try descriptor.makeClient(variant)
        let image = try descriptor.rawImagePreparation?.prepare(raw) ?? raw
        let engine = UpdateEngine(clock: simulation.clock)
        let fleet = devices
        let (longest, host) = try await HostCost.measure {
            try await simulation.run { () async throws -> Duration in
                try await withThrowingTaskGroup(of: Duration.self) { group in
                    for device in fleet {
                        group.addTask { try await engine.update(image, using: client, connector: SimulatedConnector(device: device)).protocolDuration }
                    }
                    var longest = Duration.zero
                    for try await duration in group { longest = max(longest, duration) }
                    return longest
                }
            }
        }
        let expected = try image.allBytes()
        let identical = devices.filter { $0.flash.read(0..<image.count) == expected }.count
        return ScaledMeasurement(
            label: label(descriptor.name, variant), profile: profile, count: count, identical: identical, longest: longest, host: host,
            peakResidentBytes: peakResidentBytes()
        )
    }

    /// `count` devices of `profile` updated by the fleet scheduler through one simulated adapter of
    /// `limit` connections; virtual time is compared with the ideal schedule of decision 0031.
    static func measureThroughAdapter(
        _ descriptor: ProtocolDescriptor, variant: ProtocolParameters, profile: DeviceProfile, image raw: FirmwareImage, seed: UInt64, count: Int,
        limit: Int
    ) async throws -> ScaledMeasurement {
        let client = try descriptor.makeClient(variant)
        let image = try descriptor.rawImagePreparation?.prepare(raw) ?? raw
        func campaign(_ count: Int) async throws -> (FleetReport, SimulatedAdapter, [SimulatedDevice]) {
            let simulation = Simulation(seed: seed)
            let adapter = SimulatedAdapter(name: "sim-adapter", connectionLimit: limit)
            var devices: [SimulatedDevice] = []
            for _ in 0..<count {
                devices.append(SimulatedDevice(profile: profile, model: try descriptor.makeDeviceModel(variant), simulation: simulation))
            }
            let fleet = devices.map {
                FleetDevice(
                    id: $0.address, image: image, updateProtocol: client, connectors: [("sim-adapter", SimulatedConnector(device: $0, adapter: adapter))]
                )
            }
            let scheduler = FleetScheduler(engine: UpdateEngine(clock: simulation.clock), policy: FleetPolicy(maximumAttempts: 1))
            let adapters = [FleetAdapter(name: "sim-adapter", connectionLimit: limit)]
            let report = try await simulation.run { await scheduler.run(fleet, adapters: adapters) }
            return (report, adapter, devices)
        }
        let (alone, _, _) = try await campaign(1)
        let ((report, adapter, devices), host) = try await HostCost.measure { try await campaign(count) }
        let expected = try image.allBytes()
        let identical = devices.filter { $0.flash.read(0..<image.count) == expected }.count
        // Decision 0031: the adapter carries what one link carries in full events (or k links
        // within their per-event packet caps), so the airtime bound is N·b ÷ C plus one device's
        // time off the air; each connection updates ⌈N ÷ k⌉ devices one after another.
        var shared = profile.link
        shared.packetsPerEvent = shared.packetsPerEvent.map { $0 * limit }
        let chunk = alone.devices.first?.update?.chunkSize ?? report.devices.first?.update?.chunkSize ?? 1
        let capacity = shared.theoreticalGoodput(valueLength: chunk)
        let one = alone.duration.seconds
        let airtime = Double(image.count) / capacity
        let ideal = max(Double(count) * airtime + max(0, one - airtime), Double((count + limit - 1) / limit) * one)
        return ScaledMeasurement(
            label: label(descriptor.name, variant), profile: profile, count: count, identical: identical, longest: report.duration, host: host,
            peakResidentBytes: peakResidentBytes(), adapter: (limit, adapter.peakConnections, report.duration.seconds / ideal)
        )
    }

    /// The process's peak resident set so far, in bytes (`getrusage`; Linux reports kilobytes).
    private static func peakResidentBytes() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #if os(Linux)
        return Int(usage.ru_maxrss) * 1024
        #else
        return Int(usage.ru_maxrss)
        #endif
    }

    /// "nordic-dfu prn=0".
    static func label(_ name: String, _ variant: ProtocolParameters) -> String {
        ([name] + variant.values.keys.sorted().map { "\($0)=\(variant.values[$0]!)" }).joined(separator: " ")
    }

    static func measure(
        _ descriptor: ProtocolDescriptor,
        variant: ProtocolParameters,
        profile: DeviceProfile,
        image raw: FirmwareImage,
        seed: UInt64,
        model makeModel: ((Simulation) -> any DeviceModel)? = nil
    ) async throws -> Measurement {
        let simulation = Simulation(seed: seed)
        let model = try makeModel?(simulation) ?? descriptor.makeDeviceModel(variant)
        let device = SimulatedDevice(profile: profile, model: model, simulation: simulation)
        let client = try descriptor.makeClient(variant)
        let image = try descriptor.rawImagePreparation?.prepare(raw) ?? raw
        let engine = UpdateEngine(clock: simulation.clock)
        let connector = SimulatedConnector(device: device)
        let ((report, stats), host) = try await HostCost.measure {
            try await simulation.run {
                let connection = try await connector.connectSimulated()
                let report = try await engine.update(
                    image, using: client, connector: ReusedConnection(connection: connection, description: connector.deviceDescription))
                return (report, connection.stats)
            }
        }
        return Measurement(
            protocolName: descriptor.name,
            variant: variant,
            profile: profile,
            report: report,
            capacity: profile.link.theoreticalGoodput(valueLength: report.link.maximumWriteWithoutResponse),
            host: host,
            stats: stats
        )
    }

    private static func textRow(_ m: Measurement, _ table: TextTable) -> String {
        let perMB = 1_000_000 / Double(m.report.imageSize)
        return table.row([
            label(m.protocolName, m.variant), m.profile.name, shortLink(m.profile.link), "\(m.report.link.attMTU)", "\(m.report.chunkSize)",
            virtualCell(m.report.protocolDuration), Wording.rate(m.report.goodput), Wording.rate(m.capacity),
            String(oneDecimal: m.ratio * 100) + "%", String(oneDecimal: m.headerOverhead * 100) + "%", "\(m.stats.notificationsDelivered)",
            "\(Int((m.host.wall.seconds * perMB * 1000).rounded())) ms", "\(Int((m.host.cpu.seconds * perMB * 1000).rounded())) ms",
        ])
    }

    private static func jsonLine(_ m: Measurement) -> String {
        let perMB = 1_000_000 / Double(m.report.imageSize)
        return JSONValue.object([
            "protocol": .string(m.protocolName), "variant": .string(label(m.protocolName, m.variant)), "profile": .string(m.profile.name),
            "link": .string(m.profile.link.summary),
            "attMTU": .number(Double(m.report.link.attMTU)), "chunkSize": .number(Double(m.report.chunkSize)),
            "imageSize": .number(Double(m.report.imageSize)), "virtualSeconds": .number(m.report.protocolDuration.seconds),
            "goodput": .number(m.report.goodput.rounded()), "capacity": .number(m.capacity.rounded()),
            "ratio": .number((m.ratio * 10000).rounded() / 10000), "wallSecondsPerMB": .number(m.host.wall.seconds * perMB),
            "cpuSecondsPerMB": .number(m.host.cpu.seconds * perMB), "retransmissions": .number(Double(m.stats.retransmissions)),
            "headerOverhead": .number((m.headerOverhead * 10000).rounded() / 10000), "notifications": .number(Double(m.stats.notificationsDelivered)),
            "bytesSent": .number(Double(m.report.bytesSent)), "dataWrites": .number(Double(m.report.dataWrites)),
        ]).serialized
    }

    /// The line of a row not measured because the profile's slot cannot hold the image: in
    /// `--json` too, so that a reader of the lines sees every combination it asked for.
    private static func skippedRow(
        _ protocolName: String, variant: ProtocolParameters, profile: DeviceProfile, image: FirmwareImage, json: Bool, table: TextTable
    ) -> String {
        let reason = "image larger than the slot"
        guard json else { return table.row([label(protocolName, variant), profile.name, "skipped: \(reason)"]) + "\n" }
        return JSONValue.object([
            "protocol": .string(protocolName), "variant": .string(label(protocolName, variant)), "profile": .string(profile.name),
            "imageSize": .number(Double(image.count)), "slotSize": .number(Double(profile.slotSize)), "skipped": .string(reason),
        ]).serialized + "\n"
    }

    private static func shortLink(_ link: LinkProfile) -> String {
        "\(link.phy.rawValue) \(link.connectionInterval.humanReadable) \(link.packetsPerEvent.map { "\($0)/ev" } ?? "full")"
    }

    /// The main table's columns, each at least wide enough for its figures ("virtual" up to
    /// "99999.9 s", host times up to "999999 ms"); `run` widens the first to the longest variant
    /// label it will print.
    static let columns = TextTable(
        ["protocol", "profile", "link", "MTU", "chunk", "virtual", "goodput", "capacity", "ratio", "headers", "notifs", "wall/MB", "CPU/MB"],
        minimumWidths: [17, 20, 16, 4, 6, 10, 11, 11, 7, 8, 7, 10, 10])

    /// Virtual time in seconds with one decimal, at any length of run: "3.5 s", "612.4 s" (not
    /// "10 min 12 s", which would not fit the column).
    static func virtualCell(_ duration: Duration) -> String {
        String(oneDecimal: duration.seconds) + " s"
    }

    static func parseSize(_ text: String) throws(UsageError) -> Int {
        let multipliers: [Character: Int] = ["K": 1000, "k": 1000, "M": 1_000_000, "m": 1_000_000]
        var digits = Substring(text)
        var multiplier = 1
        if let last = digits.last, let factor = multipliers[last] {
            multiplier = factor
            digits = digits.dropLast()
        }
        guard let value = Int(digits), value > 0, value <= 64_000_000 / multiplier else {
            throw UsageError("--size '\(text)' is not a size between 1 and 64M", command: "benchmark")
        }
        return value * multiplier
    }

    /// `count` bytes from `seed`: each 64-bit draw gives eight bytes, least significant first.
    /// (One draw per byte made the image cost more than the simulated link: about 16
    /// instructions per byte, half of a generic update's.)
    static func pseudoRandomBytes(_ count: Int, seed: UInt64) -> Data {
        var random = SeededRandom(seed: seed ^ 0x5EED)
        var bytes = Data(count: count)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset + 8 <= count {
                buffer.storeBytes(of: random.next().littleEndian, toByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            if offset < count {
                var last = random.next()
                for index in offset..<count {
                    buffer[index] = UInt8(truncatingIfNeeded: last)
                    last >>= 8
                }
            }
        }
        return bytes
    }

    private static var buildMode: String {
        #if DEBUG
        "debug"
        #else
        "release"
        #endif
    }
}

/// What simulating cost this host: wall-clock time and the process's CPU time (user and system).
struct HostCost: Sendable {
    var wall: Duration
    var cpu: Duration

    /// Runs `body` and says what it cost; every benchmark row measures this one way.
    static func measure<Result>(_ body: () async throws -> Result) async rethrows -> (Result, HostCost) {
        let cpuBefore = processCPUTime()
        let wallBefore = ContinuousClock.now
        let result = try await body()
        let wall = ContinuousClock.now - wallBefore
        return (result, HostCost(wall: wall, cpu: processCPUTime() - cpuBefore))
    }

    private static func processCPUTime() -> Duration {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = Duration.seconds(usage.ru_utime.tv_sec) + .microseconds(usage.ru_utime.tv_usec)
        let system = Duration.seconds(usage.ru_stime.tv_sec) + .microseconds(usage.ru_stime.tv_usec)
        return user + system
    }
}

/// A connector that hands out one already-open connection, so the benchmark can read the link's
/// statistics after the update.
private struct ReusedConnection: Connector {
    let connection: SimulatedConnection
    let description: String
    var deviceDescription: String { description }
    func connect() async throws(TransportError) -> any Transport { connection }
}
