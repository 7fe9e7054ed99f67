import Foundation
import OTACore
import OTAStoreSQLite
import OTATransportSimulator
import Synchronization
import Testing

@testable import OTACommandLine

/// `ota campaign create` choosing its devices from discovery, `--min-battery` skipping the low
/// ones, and `--window` keeping a run to its hours: through the command, as a person runs it.
@Suite(.serialized) struct CampaignTargetCommandTests {
    /// A campaign file and its image, removed afterwards.
    final class Files {
        let file = CampaignCommandTests.temporary("targets").appendingPathExtension("campaign").path
        let image: URL
        var extra: [URL] = []

        init() throws { image = try CampaignCommandTests.image(size: 4096, seed: 9).0 }

        deinit {
            try? FileManager.default.removeItem(at: image)
            for url in extra { try? FileManager.default.removeItem(at: url) }
            for suffix in ["", "-wal", "-shm", ".devices"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        }

        func write(_ text: String, as name: String) throws -> String {
            let url = CampaignCommandTests.temporary(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            extra.append(url)
            return url.path
        }

        func create(_ options: [String], devices: Int = 30) async -> (code: Int32, out: String, err: String) {
            await CampaignCommandTests.ota(["campaign", "create", file, image.path, "--protocol", "generic", "--sim-fleet", "\(devices)"] + options)
        }
    }

    /// A clock at a chosen moment that does not move; real sleeps.
    struct FixedClock: CampaignLeaseClock {
        var now: Date
        func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    }

    static func ota(_ arguments: [String], now: Date) async -> (code: Int32, out: String, err: String) {
        var environment = ToolEnvironment.standard
        environment.campaignClock = FixedClock(now: now)
        let streams = CapturedStreams()
        let code = await CommandLineTool.run(arguments, streams: streams, environment: environment)
        return (code, streams.standardOutput, streams.standardError)
    }

    /// The campaign devices of a fleet of `count` whose identity passes `accept`, in order.
    static func expected(_ count: Int, _ accept: (SimulatedCampaignIdentity) -> Bool) throws -> [String] {
        SimulatedCampaignFleet.addresses(profile: try DeviceProfile.named(SimulatedCampaignFleet.defaultProfile), count: count).filter {
            accept(SimulatedCampaignIdentity(address: $0))
        }
    }

    @Test("the simulated campaign fleet is heard with names of three kinds, RSSIs and batteries spread out, fixed by address")
    func identities() throws {
        let all = try Self.expected(300) { _ in true }.map(SimulatedCampaignIdentity.init(address:))
        #expect(Set(all.map { String($0.name.prefix { $0 != "-" }) }) == ["lock", "sensor", "meter"])
        #expect(all.allSatisfy { (-95...(-40)).contains($0.rssi) && (5...100).contains($0.battery) })
        #expect(Set(all.map(\.rssi)).count > 40 && Set(all.map(\.battery)).count > 80, "spread, not a handful of values")
        #expect(all.filter { $0.battery < 30 }.count > 30 && all.filter { $0.battery < 30 }.count < 120)
        #expect(all.filter(\.charging).count > 60 && all.filter(\.charging).count < 140, "about a third on a charger")
        let charging = try #require(all.first { $0.charging })
        #expect(charging.battery(after: .seconds(600)) == min(100, charging.battery + 10))
        let idle = try #require(all.first { !$0.charging })
        #expect(idle.battery(after: .seconds(3600)) == idle.battery)
        #expect(SimulatedCampaignIdentity(address: "sim:nrf52840-mtu244-2m/0007") == SimulatedCampaignIdentity(address: "sim:nrf52840-mtu244-2m/0007"))
    }

    @Test("name and RSSI together: exactly the devices both accept, recorded with why, shown by status")
    func nameAndRSSI() async throws {
        let files = try Files()
        let created = await files.create(["--target-name", "lock-*", "--target-name", "meter-000?", "--min-rssi", "-80", "--json"])
        #expect(created.code == 0, "\(created.err)")
        let want = try Self.expected(30) { ($0.name.hasPrefix("lock-") || ($0.name.hasPrefix("meter-000"))) && $0.rssi >= -80 }
        #expect(!want.isEmpty && want.count < 30)
        let snapshot = try SQLiteCampaignStore.open(files.file).snapshot()
        #expect(snapshot.plan.devices == want)
        #expect(snapshot.plan.selection?.criteria == "name 'lock-*' or 'meter-000?'; RSSI ≥ -80 dBm")
        #expect(snapshot.plan.selection?.discovered == 30)
        let first = SimulatedCampaignIdentity(address: want[0])
        #expect(
            snapshot.devices[0].selectedBecause?.hasSuffix("matches '\(first.name.hasPrefix("lock") ? "lock-*" : "meter-000?")', \(first.rssi) dBm") == true)
        #expect(created.out.contains("\"selected\":[{\"device\":\"\(want[0])\""))
        let status = await CampaignCommandTests.ota(["campaign", "status", files.file])
        #expect(status.out.contains("  targets: name 'lock-*' or 'meter-000?'; RSSI ≥ -80 dBm (\(want.count) of 30 discovered)\n"))
    }

    @Test("a list (addresses and names), an address pattern, and a family of a user catalog")
    func listPatternFamily() async throws {
        let files = try Files()
        let addresses = try Self.expected(12) { _ in true }
        let third = SimulatedCampaignIdentity(address: addresses[2]).name
        let list = try files.write("# site A\n\(addresses[0])\n\(third)\nsim:nrf52840-mtu244-2m/9999\n", as: "list")
        let listed = await files.create(["--target-list", list], devices: 12)
        #expect(listed.code == 0, "\(listed.err)")
        #expect(try SQLiteCampaignStore.open(files.file).snapshot().plan.devices == [addresses[0], addresses[2]])
        #expect(listed.err == "ota campaign: note: 1 entry of \(list) was not discovered: sim:nrf52840-mtu244-2m/9999\n")

        let second = try Files()
        let byAddress = await second.create(["--target-address", "sim:*/001?"], devices: 25)
        #expect(byAddress.code == 0, "\(byAddress.err)")
        #expect(try SQLiteCampaignStore.open(second.file).snapshot().plan.devices.map { String($0.suffix(4)) } == (10...19).map { "00\($0)" })

        let third2 = try Files()
        let catalog = try third2.write(
            #"{"catalog": 1, "families": [{"name": "meters", "match": {"name": "meter-*"}, "protocol": "generic"}]}"#, as: "catalog.json")
        let family = await third2.create(["--catalog", catalog, "--target-family", "meters"], devices: 20)
        #expect(family.code == 0, "\(family.err)")
        let meters = try Self.expected(20) { $0.name.hasPrefix("meter-") }
        #expect(try SQLiteCampaignStore.open(third2.file).snapshot().plan.devices == meters)
        #expect(family.out.contains("\(meters.count) simulated nrf52840-mtu244-2m devices (family meters: \(meters.count) of 20 discovered)"))
    }

    @Test("--stage-list: a stage per group file in order, the devices in none last, run stage by stage; bad groups refused")
    func stageLists() async throws {
        let files = try Files()
        let addresses = try Self.expected(10) { _ in true }
        let canary = try files.write("\(SimulatedCampaignIdentity(address: addresses[3]).name)\n", as: "canary.txt")
        let siteB = try files.write("# second\n\(addresses[7])\n\(addresses[1])\nnot-here\n", as: "site-b.txt")
        let created = await files.create(["--stage-list", canary, "--stage-list", siteB], devices: 10)
        #expect(created.code == 0, "\(created.err)")
        #expect(created.err == "ota campaign: note: 1 entry of the --stage-list files named no device the campaign took: not-here\n")
        let plan = try SQLiteCampaignStore.open(files.file).snapshot().plan
        let canaryName = URL(fileURLWithPath: canary).deletingPathExtension().lastPathComponent
        let siteBName = URL(fileURLWithPath: siteB).deletingPathExtension().lastPathComponent
        #expect(plan.stages.map(\.name) == ["1 (\(canaryName))", "2 (\(siteBName))", "3 (the rest)"])
        #expect(
            plan.stages.map(\.devices) == [
                [addresses[3]], [addresses[1], addresses[7]], addresses.enumerated().filter { ![1, 3, 7].contains($0.offset) }.map(\.element),
            ])
        let run = await CampaignCommandTests.ota(["campaign", "run", files.file])
        #expect(run.code == 0, "\(run.err)")
        let status = await CampaignCommandTests.ota(["campaign", "status", files.file])
        #expect(status.out.contains("  stage 1 (\(canaryName)): 1 updated, 0 failed, 0 to go (of 1)\n"))

        let other = try Files()
        let both = await other.create(["--stage-list", canary, "--stages", "10%,100%"], devices: 10)
        #expect(both.code == 2 && both.err.hasPrefix("ota: error: --stages and --stage-list are two ways"))
        let none = await other.create(["--stage-list", try other.write("sim:nrf52840-mtu244-2m/0099\n", as: "none.txt")], devices: 10)
        #expect(none.code == 2 && none.err.contains("names none of the 10 devices"), "\(none.err)")
        let twice = await other.create(["--stage-list", canary, "--stage-list", canary], devices: 10)
        #expect(twice.code == 2 && twice.err.contains("a device is in one stage"), "\(twice.err)")
        let missing = await other.create(["--stage-list", "/nonexistent/ota-stage-list"], devices: 10)
        #expect(missing.code == 3, "\(missing.err)")
        #expect(!FileManager.default.fileExists(atPath: other.file), "no campaign file after a refusal")
    }

    @Test("bad targets are one line with the documented exit code, and no campaign file")
    func badTargets() async throws {
        let files = try Files()
        let cases: [([String], Int32, String)] = [
            (["--target-name", "zz*"], 2, "no device matches the campaign's targets (name 'zz*'): 30 discovered, 0 named 'zz*'"),
            (["--target-name", "lock-[0-9]"], 2, "--target-name 'lock-[0-9]': '[' is not supported"),
            (["--min-rssi", "strong"], 2, "--min-rssi 'strong' is not a signal strength in dBm"),
            (["--target-family", "nope"], 2, "no family 'nope' in the device catalog"),
            (["--target-list", "/nonexistent/list.txt"], 3, "target list /nonexistent/list.txt: cannot be read (does it exist?)"),
            (["--target-list", "/tmp"], 3, "target list /tmp: is not a regular file"),
            (["--min-battery", "120%"], 2, "--min-battery '120%' is not a percentage"),
            (["--window", "9-17"], 2, "--window '9-17': expected HH:MM-HH:MM"),
        ]
        for (options, code, message) in cases {
            let result = await files.create(options)
            #expect(result.code == code, "\(options): \(result.err)")
            #expect(result.err.hasPrefix("ota: error: \(message)"), "\(result.err)")
            #expect(result.err.filter { $0 == "\n" }.count == 1, "\(result.err)")
            #expect(!FileManager.default.fileExists(atPath: files.file))
        }
        let notAtRun = await CampaignCommandTests.ota(["campaign", "run", files.file, "--min-battery", "30"])
        #expect(notAtRun.code == 2 && notAtRun.err.contains("--min-battery applies to 'ota campaign create'"))
    }

    @Test(
        "--min-battery: low devices are deferred; those on a charger are updated at a recheck, the others skipped, not failed, in run, --json and status; exit 75"
    )
    func batterySkipped() async throws {
        let files = try Files()
        #expect(await files.create(["--min-battery", "30%"], devices: 24).code == 0)
        let low = try Self.expected(24) { $0.battery < 30 && !$0.charging }
        let charged = try Self.expected(24) { $0.battery < 30 && $0.charging }
        #expect(!low.isEmpty && low.count < 8 && !charged.isEmpty)
        let run = await CampaignCommandTests.ota(["campaign", "run", files.file])
        #expect(run.code == 75, "\(run.out)\(run.err)")
        for device in low + charged {
            let level = SimulatedCampaignIdentity(address: device).battery
            #expect(run.out.contains("  \(device): deferred before attempt 1 (battery \(level)% < 30%); no attempt spent\n"), "\(run.out)")
        }
        for device in low {
            let level = SimulatedCampaignIdentity(address: device).battery
            #expect(run.out.contains("  \(device): skipped (battery \(level)% < 30%)\n"), "\(run.out)")
        }
        #expect(
            run.out.contains(
                "campaign paused: stage 1 (up to 100%) holds (short of its 90% only by skipped devices); \(24 - low.count) of 24 devices updated, \(low.count) skipped for their battery below 30%: run again once they have charged\n"
            ), "\(run.out)")
        #expect(!run.out.contains(": attempt 1 failed"))
        let store = try SQLiteCampaignStore.open(files.file)
        let snapshot = try store.snapshot()
        #expect(snapshot.phase == .running)
        #expect(snapshot.devices.filter { $0.state == .deferred }.map(\.address) == low)
        #expect(snapshot.devices.filter { $0.state == .completed }.count == 24 - low.count)
        let history = try store.history()
        for device in low {
            #expect(history.filter { $0.device == device && $0.event == "deferred" }.count == 3, "a first look and two rechecks")
        }
        for device in charged {
            // Deferred, then updated by its first counted attempt once charged past 30%.
            let events = history.filter { $0.device == device && ["deferred", "completed"].contains($0.event) }
            #expect(events.last?.event == "completed" && events.last?.attempt == 1 && events.dropLast().allSatisfy { $0.event == "deferred" })
            #expect(!events.dropLast().isEmpty)
        }
        #expect(!history.contains { $0.event == "failed" || $0.event == "retry" })

        let status = await CampaignCommandTests.ota(["campaign", "status", files.file, "--json"])
        #expect(status.code == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any])
        let skipped = try #require(object["skippedDevices"] as? [[String: Any]])
        #expect(skipped.compactMap { $0["device"] as? String } == low)
        #expect(skipped.allSatisfy { ($0["minBattery"] as? Int) == 30 && (($0["detail"] as? String)?.hasPrefix("skipped (battery ") == true) })
        #expect(object["minBattery"] as? Int == 30)

        // Run again: still low, still skipped, nothing else touched.
        let again = await CampaignCommandTests.ota(["campaign", "run", files.file, "--json"])
        #expect(again.code == 75)
        #expect(again.out.contains(#""reason":"battery""#))
        #expect(try store.history().filter { $0.event == "completed" }.count == 24 - low.count)
    }

    @Test("--window: outside it one line naming when it opens, exit 75, nothing started; inside it the campaign runs")
    func window() async throws {
        let files = try Files()
        #expect(await files.create(["--window", "22:00-05:00+01:00"], devices: 6).code == 0)
        // 2027-01-15 08:00 UTC is 09:00 at +01:00: closed until 22:00+01:00.
        let morning = Date(timeIntervalSince1970: 1_800_000_000)
        let closed = await Self.ota(["campaign", "run", files.file], now: morning)
        #expect(closed.code == 75)
        #expect(closed.out.isEmpty)
        #expect(
            closed.err
                == "ota campaign: \(files.file): outside the campaign's window 22:00-05:00+01:00: nothing started; it opens at 2027-01-15 22:00+01:00; run it again then\n"
        )
        #expect(try SQLiteCampaignStore.open(files.file).history().map(\.event) == ["created"])
        let json = await Self.ota(["campaign", "run", files.file, "--json"], now: morning)
        #expect(json.code == 75 && json.out.contains(#""opens":"2027-01-15T21:00:00Z","reason":"outside-window""#), "\(json.out)")
        let status = await Self.ota(["campaign", "status", files.file], now: morning)
        #expect(status.out.contains("  gates: attempts start 22:00-05:00+01:00\n"))
        // 23:30 at +01:00.
        let night = morning.addingTimeInterval(14 * 3600 + 30 * 60)
        let open = await Self.ota(["campaign", "run", files.file], now: night)
        #expect(open.code == 0, "\(open.out)\(open.err)")
        #expect(open.out.contains("campaign completed: 6 of 6 devices updated"))
    }
}
