import Foundation
import OTACore
import OTATestSupport
import Testing

@testable import OTAStorePostgreSQL

/// Issue 17's PostgreSQL bar: 1,000 simulated devices, 4 `ota campaign run` gateway processes on
/// one campaign in a private cluster, one of them killed with SIGKILL mid-campaign.
@Suite(.serialized, .enabled(if: PostgreSQLCluster.unavailable == nil, "\(PostgreSQLCluster.unavailable ?? "")"))
struct MultiGatewayTests {
    /// The framed protocol's window on the nrf52840-mtu244-2m profile, in bytes of data writes
    /// (what a simulated device counts): 3 batches (`window`'s default) of 16 chunks (`batch`'s)
    /// in 244-byte writes, 11,712 bytes (11,604 of them image bytes: each write less its 2-byte
    /// version-2 tag, each batch less its 4-byte check).
    static let framedWindow = 3 * 16 * 244

    /// The `ota` executable beside the test bundle, built with the tests.
    static let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ota")

    static func gateway(_ arguments: [String], output: Any, log: URL) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = output
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        return process
    }

    @Test(
        "1,000 devices, 4 gateways, one killed mid-campaign: every device updated, none leased by two gateways at once, the killed one's taken over",
        .enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)))
    func fourGatewaysOneKilled() async throws {
        let started = ContinuousClock.now
        let cluster = try await PostgreSQLCluster.start()
        defer { cluster.stop() }
        let uri = try cluster.database("fleet")
        let work = cluster.directory.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        var random: UInt64 = 17
        // 96 KiB, eight windows of the framed protocol: a device killed mid-transfer has most
        // likely received more than a window, which a restart from byte 0 would send again.
        let image = Data(
            (0..<(96 * 1024)).map { _ in
                random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: random >> 33)
            })
        let imageURL = work.appendingPathComponent("image.bin")
        try image.write(to: imageURL)
        let devices = 1000
        let create = try Self.gateway(
            ["campaign", "create", uri, imageURL.path, "--protocol", "framed", "--sim-fleet", "\(devices)"], output: FileHandle.nullDevice,
            log: work.appendingPathComponent("create.err"))
        await offThePool { create.waitUntilExit() }
        #expect(create.terminationStatus == 0, "\((try? String(contentsOf: work.appendingPathComponent("create.err"), encoding: .utf8)) ?? "")")

        let state = work.appendingPathComponent("devices").path
        let lease = 3
        func arguments(_ name: String, seed: Int) -> [String] {
            ["campaign", "run", uri, "--sim-state", state, "--gateway", name, "--lease", "\(lease)", "--adapter-limit", "4", "--seed", "\(seed)", "--json"]
        }
        let runStart = ContinuousClock.now
        var live: [(name: String, process: Process)] = []
        for index in 1...3 {
            let name = "gw-\(index)"
            live.append((name, try Self.gateway(arguments(name, seed: index), output: FileHandle.nullDevice, log: work.appendingPathComponent("\(name).err"))))
        }
        let victimOutput = Pipe()
        let victim = try Self.gateway(arguments("gw-4", seed: 4), output: victimOutput, log: work.appendingPathComponent("gw-4.err"))
        // Killed once it has made a few dozen attempts, right after an attempt started: it holds
        // leases, one of them on a device in the middle of its transfer.
        let reader = victimOutput.fileHandleForReading
        let lines = await offThePool { () -> Int in
            var lines = 0
            var pending = ""
            while lines < 2_000 {
                let chunk = reader.availableData
                guard !chunk.isEmpty else { break }
                pending += String(decoding: chunk, as: UTF8.self)
                let complete = pending.split(separator: "\n", omittingEmptySubsequences: false)
                lines += complete.count - 1
                let last = complete.dropLast().last.map(String.init) ?? ""
                pending = String(complete.last ?? "")
                if lines >= 60 && last.contains("\"started\"") { break }
            }
            // Sent from this thread as soon as the line is read: after the await, the kill would
            // wait for a cooperative thread, and with both busy the victim ran on meanwhile
            // (the SQLite kill test's runs finished their whole campaign that way).
            kill(victim.processIdentifier, SIGKILL)
            return lines
        }
        try? reader.close()
        await offThePool { victim.waitUntilExit() }
        #expect(victim.terminationReason == .uncaughtSignal, "gw-4 ended before it was killed")

        // A guard against a hung gateway, not a measure of speed.
        let deadline = ContinuousClock.now + .seconds(600)
        while live.contains(where: { $0.process.isRunning }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        for (name, process) in live {
            if process.isRunning { process.terminate() }
            await offThePool { process.waitUntilExit() }
            let log = (try? String(contentsOf: work.appendingPathComponent("\(name).err"), encoding: .utf8)) ?? ""
            #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(name): \(log)")
        }
        let wall = ContinuousClock.now - runStart

        let store = try PostgreSQLCampaignStore.open(uri: uri)
        let snapshot = try store.snapshot()
        #expect(snapshot.phase == .completed)
        #expect(snapshot.devices.count == devices && snapshot.devices.allSatisfy { $0.state == .completed })
        let history = try store.history()

        let audit = LeaseAudit(history)
        let (overlaps, outsideLease, completions, reopened) = (audit.overlaps, audit.outsideLease, audit.completions, audit.reopened)
        let takenFromVictim = audit.takenOver["gw-4"] ?? []
        #expect(overlaps.isEmpty, "\(overlaps.prefix(5))")
        #expect(outsideLease.isEmpty, "\(outsideLease.prefix(5))")
        #expect(completions.count == devices && completions.values.allSatisfy { $0 == 1 })
        #expect(!takenFromVictim.isEmpty, "gw-4 held no lease when it was killed")
        #expect(reopened >= 1, "gw-4 was killed during no attempt")
        let completedBy = Dictionary(grouping: history.filter { $0.event == "completed" }, by: { $0.gateway ?? "-" }).mapValues(\.count)
        #expect(["gw-1", "gw-2", "gw-3"].allSatisfy { (completedBy[$0] ?? 0) > 0 })

        // The killed gateway's devices resumed: each one it was updating received at most one
        // window more than the image, counted by the device across the processes.
        let resumed = try CampaignResumeAudit(history: history, window: Self.framedWindow) { device in
            try CampaignResumeAudit.received(in: URL(fileURLWithPath: state), device: device)
        }
        #expect(!resumed.devices.isEmpty, "no device of gw-4 was mid-transfer when it was killed")
        #expect(resumed.uneven.isEmpty, "\(resumed.uneven.prefix(5))")
        #expect(resumed.overWindow.isEmpty, "\(resumed.overWindow.prefix(5))")
        #expect(resumed.beyondWindowBeforeLast > 0, "no device of gw-4 had received a window when it was killed: a restart from 0 would pass")

        // Every simulated device's flash, as the gateways share it, holds the image.
        let flashes = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasSuffix(".flash") }
        #expect(flashes.count == devices)
        var wrong = 0
        for name in flashes
        where try simulatedSlot(inFlashFile: URL(fileURLWithPath: state).appendingPathComponent(name), profile: "nrf52840-mtu244-2m")
            .prefix(image.count) != image
        {
            wrong += 1
        }
        #expect(wrong == 0)

        let load =
            try PostgreSQLConnection(uri: uri).query(
                "SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = 'fleet'"
            ).first ?? []
        print(
            "four-gateway campaign: \(resumed.summary); \(devices) devices, 4 gateways (gw-4 killed after \(lines) events, \(takenFromVictim.count) of its devices taken over, \(reopened) open attempts retried), campaign wall \(wall.humanReadable), test \((ContinuousClock.now - started).humanReadable); history \(history.count) rows; completions by gateway \(completedBy.sorted { $0.key < $1.key }); pg_stat_database: commits \(load.first.flatMap { $0 } ?? "?"), rollbacks \(load.dropFirst().first.flatMap { $0 } ?? "?"), rows returned \(load.dropFirst(2).first.flatMap { $0 } ?? "?"), fetched \(load.dropFirst(3).first.flatMap { $0 } ?? "?"), inserted \(load.dropFirst(4).first.flatMap { $0 } ?? "?"), updated \(load.dropFirst(5).first.flatMap { $0 } ?? "?")"
        )
    }
}

/// Reads a campaign's history alone: each device's lease intervals, which must follow one
/// another (no device leased to two gateways at once), and every attempt's rows made by the
/// gateway holding the lease, within it.
struct LeaseAudit {
    var overlaps: [String] = []
    var outsideLease: [String] = []
    var completions: [String: Int] = [:]
    /// Devices taken over, by the gateway they were taken from.
    var takenOver: [String: Set<String>] = [:]
    /// Attempts left open and closed by the claim that took the device.
    var reopened = 0

    init(_ history: [CampaignHistoryEntry]) {
        struct Hold {
            var gateway: String
            var until: Date
        }
        var holds: [String: Hold] = [:]
        for entry in history {
            guard let device = entry.device, let gateway = entry.gateway else { continue }
            let hold = holds[device]
            switch entry.event {
            case "leased":
                if let hold, hold.gateway != gateway, entry.at < hold.until {
                    overlaps.append("\(device): leased to \(gateway) at \(entry.at) while \(hold.gateway) held it until \(hold.until)")
                }
                holds[device] = Hold(gateway: gateway, until: entry.leaseUntil ?? entry.at)
            case "renewed":
                if hold?.gateway != gateway { overlaps.append("\(device): renewed by \(gateway), held by \(hold?.gateway ?? "nobody")") }
                holds[device]?.until = entry.leaseUntil ?? entry.at
            case "taken-over":
                if let hold, entry.at < hold.until {
                    overlaps.append("\(device): taken over by \(gateway) at \(entry.at) before \(hold.gateway)'s lease ended at \(hold.until)")
                }
                takenOver[entry.detail ?? "?", default: []].insert(device)
                holds[device] = Hold(gateway: gateway, until: entry.at)
            case "started", "completed", "retry", "failed":
                if entry.detail == CampaignRunner.stoppedDuringAttempt && hold?.gateway == gateway {
                    reopened += 1
                } else if let hold, hold.gateway == gateway, entry.at <= hold.until {
                    // Within its lease.
                } else {
                    outsideLease.append("\(device): \(entry.event) by \(gateway) outside its lease")
                }
                if entry.event == "completed" { completions[device, default: 0] += 1 }
                if entry.event != "started" { holds[device] = nil }
            default:
                break
            }
        }
    }
}

@Suite struct LeaseAuditTests {
    static let t0 = Date(timeIntervalSince1970: 1_000)

    static func entry(_ seconds: Double, _ event: String, _ gateway: String, until: Double? = nil, detail: String? = nil) -> CampaignHistoryEntry {
        CampaignHistoryEntry(
            at: t0.addingTimeInterval(seconds), device: "d", event: event, attempt: 1, detail: detail, gateway: gateway,
            leaseUntil: until.map { t0.addingTimeInterval($0) })
    }

    @Test("the audit finds a device leased to a second gateway before the first one's lease ended, and an attempt outside a lease")
    func findsOverlaps() {
        let good = LeaseAudit([
            Self.entry(0, "leased", "a", until: 3), Self.entry(1, "started", "a"), Self.entry(2, "renewed", "a", until: 5),
            Self.entry(6, "taken-over", "b", detail: "a"), Self.entry(6, "retry", "b", detail: CampaignRunner.stoppedDuringAttempt),
            Self.entry(6, "leased", "b", until: 9), Self.entry(7, "started", "b"), Self.entry(8, "completed", "b"),
        ])
        #expect(good.overlaps.isEmpty && good.outsideLease.isEmpty && good.reopened == 1 && good.takenOver == ["a": ["d"]])
        // Taken over at 4, but the renewal kept a's lease until 5.
        let early = LeaseAudit([
            Self.entry(0, "leased", "a", until: 3), Self.entry(2, "renewed", "a", until: 5), Self.entry(4, "taken-over", "b", detail: "a"),
            Self.entry(4, "leased", "b", until: 7),
        ])
        #expect(early.overlaps.count == 1)
        // A completion recorded by a gateway after its lease ran out.
        let late = LeaseAudit([Self.entry(0, "leased", "a", until: 3), Self.entry(1, "started", "a"), Self.entry(4, "completed", "a")])
        #expect(late.outsideLease.count == 1)
    }
}
