import Foundation
import OTACore
import OTATransportSimulator
import Synchronization
import Testing

@testable import OTAStoreSQLite

/// A campaign's battery gate and time window, run by ``CampaignRunner`` on simulated devices with
/// their state in a real SQLite file; and a file of the layout before them, migrated.
@Suite("Campaign gates")
struct CampaignGateTests {
    typealias Fleet = CampaignRunnerTests.Fleet

    static func plan(
        _ fleet: Fleet, stages: [Double] = [100], attempts: Int = 3, abortAt: Double = 0.2, threshold: Double = 0.9, minimumBattery: Int? = nil,
        window: CampaignWindow? = nil
    ) throws -> CampaignPlan {
        try CampaignPlan(
            name: "gates", protocolName: "generic", image: CampaignImage(path: "image.bin", size: fleet.image.count, sha256: "-"),
            stages: CampaignPlan.stages(of: fleet.addresses, endingAt: stages), maximumAttempts: attempts, abortFailureRate: abortAt,
            successThreshold: threshold, minimumBattery: minimumBattery, window: window)
    }

    /// Runs once, `observe` seeing every event (inside the simulation, in order).
    static func execute(
        _ fleet: Fleet, _ store: any CampaignStore, leaseClock: any CampaignLeaseClock = WallLeaseClock(),
        observe: (@Sendable (CampaignRunner.Event) -> Void)? = nil
    ) async throws -> CampaignRunResult {
        let runner = CampaignRunner(
            engine: UpdateEngine(clock: fleet.simulation.clock), backoff: FleetPolicy(initialBackoff: .seconds(1)), gateway: "gate-test",
            leaseClock: leaseClock)
        return try await fleet.simulation.run { () async throws(OTAError) -> CampaignRunResult in
            try await runner.execute(store, fleet: fleet, observe: observe)
        }
    }

    static func events(_ store: SQLiteCampaignStore, _ device: String) throws -> [String] {
        try store.history().filter { $0.device == device && !["leased", "renewed"].contains($0.event) }.map {
            "\($0.event) \($0.attempt.map(String.init) ?? "-") \($0.detail ?? "-")"
        }
    }

    @Test("a device below the minimum is deferred, no attempt spent, then updated once it has charged; its history says so")
    func deferredThenUpdated() async throws {
        let fleet = Fleet(count: 6, limit: 2, imageSize: 4096)
        let low = fleet.addresses[1]
        fleet.devices[low]!.batteryLevel = 12
        let (store, path) = try CampaignRunnerTests.store(try Self.plan(fleet, minimumBattery: 30))
        defer { SQLiteCampaignStoreTests.remove(path) }
        let deferrals = Mutex(0)
        let result = try await Self.execute(fleet, store) { event in
            // It charges while it waits for its recheck.
            if case .deferred(let device, _, let battery) = event {
                #expect(device == low && battery == BatteryBelowMinimum(level: 12, minimum: 30))
                deferrals.withLock { $0 += 1 }
                fleet.devices[low]!.batteryLevel = 80
            }
        }
        #expect(result.stop == nil)
        #expect(result.snapshot.phase == .completed)
        #expect(deferrals.withLock { $0 } == 1)
        #expect(fleet.addresses.allSatisfy(fleet.holdsImage))
        let record = try #require(result.snapshot.devices.first { $0.address == low })
        #expect(record.state == .completed && record.attempts == 1 && record.battery == 12, "the deferral spent no attempt")
        #expect(
            try Self.events(store, low) == [
                "started 1 gate-test", "deferred 1 battery 12% < 30%", "started 1 gate-test",
                "completed 1 \(try #require(try store.history().last { $0.device == low && $0.event == "completed" }?.detail))",
            ])
    }

    @Test("a device still low at the end of the run is skipped, not failed: state, history rows, stop; a later run updates it")
    func skippedForBattery() async throws {
        let fleet = Fleet(count: 10, limit: 4, imageSize: 4096)
        let low = fleet.addresses[3]
        fleet.devices[low]!.batteryLevel = 12
        let (store, path) = try CampaignRunnerTests.store(try Self.plan(fleet, attempts: 1, minimumBattery: 30))
        defer { SQLiteCampaignStoreTests.remove(path) }
        let result = try await Self.execute(fleet, store)
        #expect(result.stop == .batteryHeld(stage: nil))
        #expect(result.snapshot.phase == .running, "not aborted, not completed")
        #expect(result.snapshot.stages.map(\.completed) == [9] && result.snapshot.stages.map(\.deferred) == [1] && result.snapshot.stages.map(\.failed) == [0])
        let record = try #require(result.snapshot.devices.first { $0.address == low })
        #expect(record.state == .deferred && record.attempts == 0 && record.battery == 12 && record.lastError == nil)
        // The first look and the two rechecks, each a deferred row with the level; no failure.
        #expect(try Self.events(store, low) == Array(repeating: ["started 1 gate-test", "deferred 1 battery 12% < 30%"], count: 3).flatMap { $0 })
        #expect(!fleet.holdsImage(low))
        #expect(
            result.stop?.detail(result.snapshot)
                == "9 of 10 devices updated, 1 skipped for their battery below 30%: run again once they have charged")

        // With a single attempt allowed, the deferrals spent none: charged, it is updated.
        fleet.devices[low]!.batteryLevel = 64
        let again = try await Self.execute(fleet, try SQLiteCampaignStore.open(path))
        #expect(again.stop == nil && again.snapshot.phase == .completed)
        #expect(fleet.holdsImage(low))
        #expect(try store.history().filter { $0.event == "completed" }.count == 10)
    }

    @Test("thresholds: skipped devices are not failures, and a stage short of success only by them holds instead of aborting")
    func thresholds() async throws {
        // Stage 1 is 5 devices: 2 skipped leave 3 updated (60% < 90%), 100% counting them: it holds; stage 2 waits.
        let fleet = Fleet(count: 10, limit: 4, imageSize: 4096)
        for index in [0, 2] { fleet.devices[fleet.addresses[index]]!.batteryLevel = 5 }
        let (store, path) = try CampaignRunnerTests.store(try Self.plan(fleet, stages: [50, 100], abortAt: 0.1, minimumBattery: 20))
        defer { SQLiteCampaignStoreTests.remove(path) }
        let held = try await Self.execute(fleet, store)
        #expect(held.stop == .batteryHeld(stage: 0))
        #expect(held.snapshot.phase == .running, "40% skipped is over --abort-at 10%, yet no abort: they did not fail")
        #expect(held.snapshot.stages.map(\.completed) == [3, 0])
        #expect(held.stop?.detail(held.snapshot).hasPrefix("stage 1 (up to 50%) holds (short of its 90% only by skipped devices)") == true)
        #expect(fleet.addresses[5...].allSatisfy { !fleet.holdsImage($0) }, "the next stage did not start")

        // A failure as well: 3 updated + 1 skipped of 5 cannot reach 90%: the campaign aborts, naming both.
        let other = Fleet(count: 10, limit: 4, imageSize: 4096)
        other.devices[other.addresses[0]]!.batteryLevel = 5
        var faults = LinkFaults()
        faults.failFlashAtBytes = 1024
        other.devices[other.addresses[1]]!.faults = faults
        let (second, secondPath) = try CampaignRunnerTests.store(try Self.plan(other, stages: [50, 100], attempts: 1, abortAt: 0.5, minimumBattery: 20))
        defer { SQLiteCampaignStoreTests.remove(secondPath) }
        let aborted = try await Self.execute(other, second)
        #expect(aborted.stop == nil && aborted.snapshot.phase == .aborted)
        #expect(
            aborted.snapshot.phaseDetail
                == "stage 1 (up to 50%): 3 of 5 devices updated (60%), 1 skipped for their battery, below the 90% needed to go on; later stages not started")
    }

    @Test("outside the window nothing starts, and the stop names when it opens")
    func windowClosedBefore() async throws {
        let fleet = Fleet(count: 6, limit: 2, imageSize: 4096)
        let clock = ManualLeaseClock()  // 08:00 UTC
        let window = try CampaignWindow(parsing: "22:00-05:00")
        let (store, path) = try CampaignRunnerTests.store(try Self.plan(fleet, window: window))
        defer { SQLiteCampaignStoreTests.remove(path) }
        let result = try await Self.execute(fleet, store, leaseClock: clock)
        let opens = Date(timeIntervalSince1970: 1_800_000_000 + 14 * 3600)
        #expect(result.stop == .outsideWindow(window: window, opens: opens))
        #expect(result.stop?.detail(result.snapshot) == "outside the campaign's window 22:00-05:00 UTC: nothing started; it opens at 2027-01-15 22:00 UTC")
        #expect(try store.history().map(\.event) == ["created"], "not even a lease")
        #expect(result.snapshot.phase == .running)
    }

    @Test("a window closing mid-run: attempts under way finish, none starts after; a run in the next window goes on")
    func windowClosingMidRun() async throws {
        let fleet = Fleet(count: 20, limit: 4, imageSize: 4096)
        let clock = ManualLeaseClock()  // 08:00 UTC
        let window = try CampaignWindow(parsing: "07:00-09:00")
        let (store, path) = try CampaignRunnerTests.store(try Self.plan(fleet, window: window))
        defer { SQLiteCampaignStoreTests.remove(path) }
        // The first batch takes the window past its end. With a window a batch is the adapter's 4
        // connections, not twice that: each of its devices starts at once, none after the close.
        let result = try await Self.execute(fleet, store, leaseClock: clock) { event in
            if case .round(_, 1, _) = event { clock.advance(3600) }
        }
        let opens = Date(timeIntervalSince1970: 1_800_000_000 + 23 * 3600)
        #expect(result.stop == .windowClosed(window: window, opens: opens))
        #expect(result.snapshot.phase == .running)
        #expect(result.snapshot.devices.filter { $0.state == .completed }.count == 4, "the batch under way finished")
        #expect(result.snapshot.devices.filter { $0.state == .pending && $0.attempts == 0 }.count == 16)
        #expect(try store.history().filter { $0.event == "started" }.count == 4, "no attempt started after the close")
        #expect(
            result.stop?.detail(result.snapshot)
                == "the campaign's window 07:00-09:00 UTC closed: no attempt started after it, 4 of 20 devices updated so far; it opens again at 2027-01-16 07:00 UTC"
        )
        // Still closed: nothing.
        clock.advance(3600)
        #expect(try await Self.execute(fleet, try SQLiteCampaignStore.open(path), leaseClock: clock).stop == .outsideWindow(window: window, opens: opens))
        // The next morning.
        clock.advance(21 * 3600 + 60)
        let next = try await Self.execute(fleet, try SQLiteCampaignStore.open(path), leaseClock: clock)
        #expect(next.stop == nil && next.snapshot.phase == .completed)
        #expect(fleet.addresses.allSatisfy(fleet.holdsImage))
        #expect(try CampaignRunnerTests.completions(store).values.allSatisfy { $0 == 1 })
    }

    @Test("a layout-2 file (before targets, batteries and windows) opens, is migrated to 3, and runs to the end")
    func migratesLayout2() async throws {
        let fleet = Fleet(count: 4, limit: 2, imageSize: 2048)
        let path = SQLiteCampaignStoreTests.temporaryPath()
        defer { SQLiteCampaignStoreTests.remove(path) }
        // The layout-2 schema as ota wrote it before this change, one device already updated.
        let old = try SQLiteDatabase(path: path, create: true)
        try old.execute(
            """
            PRAGMA journal_mode = WAL;
            CREATE TABLE campaign (
                id INTEGER PRIMARY KEY CHECK (id = 1), schema INTEGER NOT NULL, name TEXT NOT NULL, protocol TEXT NOT NULL,
                image_path TEXT NOT NULL, image_size INTEGER NOT NULL, image_sha256 TEXT NOT NULL, maximum_attempts INTEGER NOT NULL,
                abort_failure_rate REAL NOT NULL, success_threshold REAL NOT NULL, phase TEXT NOT NULL, phase_detail TEXT);
            CREATE TABLE stage (number INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE device (
                position INTEGER PRIMARY KEY, address TEXT NOT NULL UNIQUE, stage INTEGER NOT NULL REFERENCES stage(number),
                state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, lease_owner TEXT, lease_expires REAL);
            CREATE INDEX device_claim ON device (stage, state, attempts, position);
            CREATE TABLE history (
                id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, device TEXT, event TEXT NOT NULL, attempt INTEGER, detail TEXT,
                gateway TEXT, lease_until REAL);
            """)
        try old.query(
            "INSERT INTO campaign VALUES (1, 2, 'old', 'generic', 'image.bin', ?, '-', 3, 0.2, 0.9, 'running', NULL)", [.integer(Int64(fleet.image.count))])
        try old.query("INSERT INTO stage VALUES (0, '1 (up to 100%)')")
        for (position, address) in fleet.addresses.enumerated() {
            try old.query(
                "INSERT INTO device (position, address, stage, state, attempts) VALUES (?, ?, 0, ?, ?)",
                [.integer(Int64(position)), .text(address), .text(position == 0 ? "completed" : "pending"), .integer(position == 0 ? 1 : 0)])
        }
        try old.query("INSERT INTO history (at, event, detail) VALUES (0, 'created', '4 devices in 1 stages')")

        let store = try SQLiteCampaignStore.open(path)
        let snapshot = try store.snapshot()
        #expect(snapshot.plan.selection == nil && snapshot.plan.minimumBattery == nil && snapshot.plan.window == nil)
        #expect(snapshot.devices.map(\.state) == [.completed, .pending, .pending, .pending])
        #expect(try SQLiteDatabase(path: path, create: false).query("SELECT schema FROM campaign").first?.first?.integer == 3)
        // Opened again: already layout 3, nothing to do.
        #expect(try SQLiteCampaignStore.open(path).snapshot() == snapshot)
        let result = try await Self.execute(fleet, store)
        #expect(result.snapshot.phase == .completed)
        #expect(result.snapshot.phaseDetail == "4 of 4 devices updated")
    }

    @Test("the plan's targets, minimum battery and window, and a deferral, read back from the file; claims leave deferred devices unless asked")
    func storeRoundTrip() throws {
        var plan = try SQLiteCampaignStoreTests.plan(devices: 4, stages: [100])
        plan.selection = CampaignSelectionRecord(
            criteria: "name 'dev-*'", discovered: 9, reasons: Dictionary(uniqueKeysWithValues: plan.devices.map { ($0, "name '\($0)' matches 'dev-*'") }))
        plan.minimumBattery = 30
        plan.window = try CampaignWindow(parsing: "22:00-05:00+01:00")
        let path = SQLiteCampaignStoreTests.temporaryPath()
        defer { SQLiteCampaignStoreTests.remove(path) }
        let store = try SQLiteCampaignStore.create(at: path, plan: plan)
        #expect(try SQLiteCampaignStore.open(path).snapshot().plan == plan)
        let first = try #require(try store.claim(stage: 0, limit: 1, gateway: "g", lease: .seconds(60)).first).address
        try store.attemptStarted(device: first, attempt: 1, gateway: "g")
        try store.attemptDeferred(device: first, attempt: 1, gateway: "g", battery: BatteryBelowMinimum(level: 12, minimum: 30))
        let record = try #require(try store.snapshot().devices.first)
        #expect(record.state == .deferred && record.attempts == 0 && record.battery == 12 && record.gateway == nil)
        #expect(try store.progress().stages.first?.deferred == 1)
        #expect(try store.history().last.map { "\($0.event) \($0.attempt ?? 0) \($0.detail ?? "")" } == "deferred 1 battery 12% < 30%")
        #expect(try store.claim(stage: 0, limit: 9, gateway: "g2", lease: .seconds(60)).map(\.address) == Array(plan.devices.dropFirst()))
        let rechecked = try store.claim(stage: 0, limit: 9, gateway: "g", lease: .seconds(60), includingDeferred: true)
        #expect(rechecked.map(\.address) == [first], "the others are leased to g2; the deferred one comes back")
        #expect(rechecked.first?.state == .deferred && rechecked.first?.battery == 12)
        // A gateway that does not hold the lease cannot defer.
        let lost = #expect(throws: OTAError.self) {
            try store.attemptDeferred(device: first, attempt: 1, gateway: "other", battery: BatteryBelowMinimum(level: 12, minimum: 30))
        }
        #expect(lost?.code == .storage)
    }
}
