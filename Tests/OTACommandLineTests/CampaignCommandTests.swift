import Foundation
import OTACore
import OTAStoreSQLite
import OTATestSupport
import Testing

@testable import OTACommandLine

/// `ota campaign`: created, run, killed with SIGKILL at seeded moments and run again, the campaign
/// file and the simulated devices end with every device updated exactly once.
@Suite(.serialized) struct CampaignCommandTests {
    static let executable = HostileCommandTests.executable

    static func temporary(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("ota-campaign-\(name)-\(UUID().uuidString)")
    }

    static func image(size: Int, seed: UInt64) throws -> (URL, Data) {
        var random = seed
        let bytes = Data(
            (0..<size).map { _ in
                random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: random >> 33)
            })
        let url = temporary("image").appendingPathExtension("bin")
        try bytes.write(to: url)
        return (url, bytes)
    }

    static func ota(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let (code, streams) = await runTool(arguments)
        return (code, streams.standardOutput, streams.standardError)
    }

    @Test(
        "SIGKILL at 20 seeded moments of 'ota campaign run', then a last run: every device's flash holds the image and the history has one completion each",
        .enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)))
    func killedAndRestarted() async throws {
        let (imageURL, image) = try Self.image(size: 96 * 1024, seed: 3)
        let file = Self.temporary("kill").appendingPathExtension("campaign").path
        defer {
            try? FileManager.default.removeItem(at: imageURL)
            for suffix in ["", "-wal", "-shm", ".devices"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        }
        let devices = 120
        let created = await Self.ota([
            "campaign", "create", file, imageURL.path, "--protocol", "framed", "--sim-fleet", "\(devices)", "--stages", "10%,100%", "--attempts", "30",
        ])
        #expect(created.code == 0, "\(created.err)")

        var random: UInt64 = 20_241_201
        var kills = 0
        var runs = 0
        var completedSoFar = 0
        var ended: [String] = []
        while kills < 20 {
            runs += 1
            #expect(runs <= 60, "the campaign ended before 20 kills landed")
            if runs > 60 { break }
            // The kill lands after a seeded number of the run's --json lines (1 to 16: before any
            // attempt, between attempts, during transfers, at an attempt's end), which keeps the
            // moments the same on a loaded machine, where a timed sleep would overshoot the run.
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let killAfter = 1 + Int(random >> 33) % 16
            let process = Process()
            process.executableURL = Self.executable
            // One gateway name across the runs: each run takes back the leases the killed one held.
            process.arguments = ["campaign", "run", file, "--adapter-limit", "4", "--seed", "\(runs)", "--gateway", "kill-test", "--json"]
            let output = Pipe()
            process.standardOutput = output
            let log = URL(fileURLWithPath: file + ".run-\(runs).err")
            defer { try? FileManager.default.removeItem(at: log) }
            try Data().write(to: log)
            let errors = try FileHandle(forWritingTo: log)
            defer { try? errors.close() }
            process.standardError = errors
            try process.run()
            // The pipe is read, the kill sent and the child waited for on a thread of its own
            // (offThePool): blocking one of the cooperative pool's two threads for the whole
            // test starved other suites' tasks. The kill is sent from that thread as soon as the
            // line is read, and the child reaped by Process itself (waitUntilExit), whose
            // termination reason is what says the kill landed.
            let reader = output.fileHandleForReading
            let seen = await offThePool { () -> Int in
                var lines = 0
                while lines < killAfter {
                    let chunk = reader.availableData
                    guard !chunk.isEmpty else { break }
                    lines += chunk.filter { $0 == UInt8(ascii: "\n") }.count
                }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                try? reader.close()
                return lines
            }
            if process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL {
                kills += 1
            } else {
                // The run ended before its kill: only the campaign's end may do that.
                let reason = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                ended.append("run \(runs) (kill after \(killAfter) lines, \(seen) seen): exit \(process.terminationStatus) \(reason)")
            }
            // The file is whole after every kill, and nothing it recorded as done is undone.
            let snapshot = try SQLiteCampaignStore.open(file).snapshot()
            let completed = snapshot.devices.filter { $0.state == .completed }.count
            #expect(completed >= completedSoFar)
            completedSoFar = completed
            if snapshot.phase != .running { break }
        }
        #expect(kills >= 20, "\(ended)")
        #expect(ended.count <= 1, "runs ended before their kill: \(ended)")
        #expect(completedSoFar < devices, "every kill landed after the end: the test killed nothing mid-campaign")

        let last = await Self.ota(["campaign", "run", file, "--adapter-limit", "4", "--seed", "999", "--gateway", "kill-test"])
        #expect(last.code == 0, "\(last.err)")
        let store = try SQLiteCampaignStore.open(file)
        let snapshot = try store.snapshot()
        #expect(snapshot.phase == .completed)
        #expect(snapshot.devices.allSatisfy { $0.state == .completed })
        let history = try store.history()
        var completions: [String: Int] = [:]
        for entry in history where entry.event == "completed" { completions[entry.device!, default: 0] += 1 }
        #expect(completions.count == devices)
        #expect(completions.values.allSatisfy { $0 == 1 })
        // Attempts left open by a kill were counted and retried.
        #expect(history.contains { $0.detail == "the previous run stopped during this attempt" })
        // Every simulated device's flash, as kept beside the campaign, holds the image.
        let directory = URL(fileURLWithPath: file + ".devices")
        let flashes = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".flash") }
        #expect(flashes.count == devices)
        for name in flashes {
            let file = directory.appendingPathComponent(name)
            // Only the written sectors are kept (decision 0081): a fraction of the 1 MB slot.
            let size = try Data(contentsOf: file).count
            #expect(size < image.count + image.count / 10, "\(name): \(size) bytes")
            #expect(try simulatedSlot(inFlashFile: file, profile: "nrf52840-mtu244-2m").prefix(image.count) == image, "\(name)")
        }
        // Each attempt a kill cut off resumed: the device received at most one window more
        // per cut than a device never cut off (framed on nrf52840-mtu244-2m: 3 batches of 16
        // 244-byte writes), and some had received more than that when cut off.
        let resumed = try CampaignResumeAudit(history: history, window: 3 * 16 * 244) { device in
            try CampaignResumeAudit.received(in: directory, device: device)
        }
        #expect(!resumed.devices.isEmpty, "no kill cut off an attempt")
        #expect(resumed.uneven.isEmpty, "\(resumed.uneven.prefix(5))")
        #expect(resumed.overWindow.isEmpty, "\(resumed.overWindow.prefix(5))")
        #expect(resumed.beyondWindowBeforeLast > 0, "no device had received a window when it was cut off: a restart from 0 would pass")
        print("campaign kill test: \(kills) kills over \(runs) runs, \(history.count) history rows; \(resumed.summary)")
    }

    @Test("create, status and run refuse bad input with one line and the documented exit code")
    func badInput() async throws {
        let (imageURL, _) = try Self.image(size: 4096, seed: 1)
        let file = Self.temporary("bad").appendingPathExtension("campaign").path
        defer {
            try? FileManager.default.removeItem(at: imageURL)
            for suffix in ["", "-wal", "-shm", ".devices"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        }
        let cases: [([String], Int32, String)] = [
            (["campaign", "fly", file], 2, "unknown action 'fly'"),
            (["campaign", "create", file], 2, "needs the IMAGE"),
            (["campaign", "create", file, imageURL.path, "--sim-fleet", "3"], 2, "needs --protocol NAME"),
            (["campaign", "create", file, imageURL.path, "--protocol", "framed"], 2, "needs --sim-fleet N"),
            (["campaign", "create", file, imageURL.path, "--protocol", "framed", "--sim-fleet", "0"], 2, "--sim-fleet"),
            (["campaign", "create", file, imageURL.path, "--protocol", "framed", "--sim-fleet", "5", "--stages", "50%,20%"], 2, "rising percentages"),
            (["campaign", "create", file, imageURL.path, "--protocol", "framed", "--sim-fleet", "5", "--abort-at", "150%"], 2, "between 0% and 100%"),
            (["campaign", "create", file, imageURL.path, "--protocol", "nope", "--sim-fleet", "5"], 2, "nope"),
            (["campaign", "create", file, "/nonexistent/image.bin", "--protocol", "framed", "--sim-fleet", "5"], 3, "image.bin"),
            (["campaign", "run", file + ".missing"], 3, "no such campaign file"),
            (["campaign", "status", imageURL.path], 3, "is not a campaign file"),
            (["campaign", "status", file, "--adapter-limit", "2"], 2, "--adapter-limit applies to 'ota campaign run'"),
            (["campaign", "status", file, "--lease", "5"], 2, "--lease applies to 'ota campaign run'"),
            (["campaign", "run", "postgres://localhost/fleet"], 2, "needs --sim-state DIR"),
            (["campaign", "run", file, "--lease", "0"], 2, "--lease"),
            (["campaign", "status", "postgresql://ota:secret@/fleet?host=/nonexistent-socket-directory"], 3, "cannot connect to the campaign database"),
        ]
        for (arguments, code, text) in cases {
            let result = await Self.ota(arguments)
            #expect(result.code == code, "\(arguments): \(result.err)")
            #expect(result.err.contains(text), "\(arguments): \(result.err)")
            #expect(result.err.split(separator: "\n").count == 1, "\(arguments): \(result.err)")
        }

        let created = await Self.ota(["campaign", "create", file, imageURL.path, "--protocol", "generic", "--sim-fleet", "6"])
        #expect(created.code == 0, "\(created.err)")
        let again = await Self.ota(["campaign", "create", file, imageURL.path, "--protocol", "generic", "--sim-fleet", "6"])
        #expect(again.code == 3 && again.err.contains("exists already"), "\(again.err)")
        // The image changed after the campaign was made: refused before any device is touched.
        try Data(repeating: 7, count: 4096).write(to: imageURL)
        let changed = await Self.ota(["campaign", "run", file])
        #expect(changed.code == 3 && changed.err.contains("changed since the campaign was created"), "\(changed.err)")
        #expect(!FileManager.default.fileExists(atPath: file + ".devices"))
    }

    @Test("a campaign runs to completion in one go; status then shows every stage done; run again changes nothing")
    func runAndStatus() async throws {
        let (imageURL, _) = try Self.image(size: 8192, seed: 2)
        let file = Self.temporary("status").appendingPathExtension("campaign").path
        defer {
            try? FileManager.default.removeItem(at: imageURL)
            for suffix in ["", "-wal", "-shm", ".devices"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        }
        _ = await Self.ota(["campaign", "create", file, imageURL.path, "--protocol", "generic", "--sim-fleet", "20", "--stages", "20%,100%"])
        let run = await Self.ota(["campaign", "run", file, "--adapter-limit", "3"])
        #expect(run.code == 0, "\(run.err)")
        #expect(run.out.contains("campaign completed: 20 of 20 devices updated"), "\(run.out)")
        let status = await Self.ota(["campaign", "status", file, "--json"])
        #expect(status.code == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any])
        #expect(object["phase"] as? String == "completed")
        let stages = try #require(object["stages"] as? [[String: Any]])
        #expect(stages.map { $0["completed"] as? Int } == [4, 16])
        let history = try SQLiteCampaignStore.open(file).history().count
        let again = await Self.ota(["campaign", "run", file])
        #expect(again.code == 0)
        #expect(try SQLiteCampaignStore.open(file).history().count == history)
    }
}
