import Foundation
import OTACore
import Testing

@testable import OTAStorePostgreSQL

/// The PostgreSQL store's part of a campaign's targets, battery gate and window, against a real
/// server (a private cluster per test), and a database of the layout before them, migrated.
///
/// In the store's suite, which is serialized: each test starts a cluster (now on a thread of its own,
/// `PostgreSQLCluster.start()`; before, `initdb` and `pg_ctl` blocked the cooperative pool), and clusters started by suites running side
/// by side starved the pool long enough for a simulation elsewhere to see no progress for 2 s
/// (SQLiteLeaseTests.twoGateways failed with "simulation deadlock" in full runs).
extension PostgreSQLCampaignStoreTests {
    @Test("targets, minimum battery and window read back; a deferral spends no attempt, keeps the level, has its history row; claims leave it unless asked")
    func deferralAndPlan() async throws {
        let cluster = try await PostgreSQLCluster.start()
        defer { cluster.stop() }
        let uri = try cluster.database("gates")
        var plan = try PostgreSQLCampaignStoreTests.plan(devices: 4)
        plan.selection = CampaignSelectionRecord(
            criteria: "family door-lock; RSSI ≥ -75 dBm", discovered: 11,
            reasons: Dictionary(uniqueKeysWithValues: plan.devices.dropLast().map { ($0, "family door-lock, -61 dBm") }))
        plan.minimumBattery = 30
        plan.window = try CampaignWindow(parsing: "22:00-05:00-03:00")
        let store = try PostgreSQLCampaignStore.create(uri: uri, plan: plan)
        let other = try PostgreSQLCampaignStore.open(uri: uri)
        #expect(try other.snapshot().plan == plan, "one device without a reason stays without one")

        // 20% of 4 devices, rounded down, is none: that stage is left out, and the one stage has all 4.
        let stage = try other.snapshot().devices[0].stage
        let device = try #require(try store.claim(stage: stage, limit: 1, gateway: "g1", lease: .seconds(60)).first).address
        try store.attemptStarted(device: device, attempt: 1, gateway: "g1")
        try store.attemptDeferred(device: device, attempt: 1, gateway: "g1", battery: BatteryBelowMinimum(level: 12, minimum: 30))
        let record = try #require(try other.snapshot().devices.first { $0.address == device })
        #expect(record.state == .deferred && record.attempts == 0 && record.battery == 12 && record.gateway == nil)
        #expect(record.selectedBecause == "family door-lock, -61 dBm")
        #expect(try other.progress().stages[stage].deferred == 1)
        let rows = try other.history().filter { $0.device == device }.map { "\($0.event) \($0.attempt.map(String.init) ?? "-") \($0.detail ?? "-")" }
        #expect(rows == ["leased - -", "started 1 g1", "deferred 1 battery 12% < 30%"])

        let pending = try other.claim(stage: stage, limit: 9, gateway: "g2", lease: .seconds(60)).map(\.address)
        #expect(!pending.contains(device) && pending.count == 3)
        let rechecked = try other.claim(stage: stage, limit: 9, gateway: "g3", lease: .seconds(60), includingDeferred: true)
        #expect(rechecked.map(\.address) == [device])
        #expect(rechecked.first?.state == .deferred && rechecked.first?.battery == 12)
        let lost = #expect(throws: OTAError.self) {
            try store.attemptDeferred(device: device, attempt: 1, gateway: "g1", battery: BatteryBelowMinimum(level: 12, minimum: 30))
        }
        #expect(lost?.message.contains("gateway g1 no longer holds the lease on \(device) (it is leased to g3)") == true, "\(lost?.message ?? "")")
        // Charged: the next attempt is its first.
        try other.attemptStarted(device: device, attempt: 1, gateway: "g3")
        try other.attemptFinished(device: device, attempt: 1, gateway: "g3", outcome: .completed(detail: "4096 bytes"))
        #expect(try store.snapshot().devices.first { $0.address == device }?.attempts == 1)
    }

    @Test("a layout-1 database (before targets, batteries and windows) is migrated on open, once, and claims as before")
    func migratesLayout1() async throws {
        let cluster = try await PostgreSQLCluster.start()
        defer { cluster.stop() }
        let uri = try cluster.database("layout1")
        let old = try PostgreSQLConnection(uri: uri)
        for statement in [
            """
            CREATE TABLE campaign (
                id integer PRIMARY KEY CHECK (id = 1), schema integer NOT NULL, name text NOT NULL, protocol text NOT NULL,
                image_path text NOT NULL, image_size bigint NOT NULL, image_sha256 text NOT NULL, maximum_attempts integer NOT NULL,
                abort_failure_rate double precision NOT NULL, success_threshold double precision NOT NULL, phase text NOT NULL,
                phase_detail text)
            """,
            "CREATE TABLE stage (number integer PRIMARY KEY, name text NOT NULL)",
            """
            CREATE TABLE device (
                position integer PRIMARY KEY, address text NOT NULL UNIQUE, stage integer NOT NULL REFERENCES stage (number),
                state text NOT NULL, attempts integer NOT NULL DEFAULT 0, last_error text, lease_owner text, lease_expires timestamptz)
            """,
            """
            CREATE TABLE history (
                id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), device text, event text NOT NULL, attempt integer,
                detail text, gateway text, lease_until timestamptz)
            """,
            "INSERT INTO campaign VALUES (1, 1, 'old', 'generic', '/tmp/image.bin', 4096, 'cd', 3, 0.25, 0.5, 'running', NULL)",
            "INSERT INTO stage VALUES (0, 'all')",
            "INSERT INTO device (position, address, stage, state, attempts) VALUES (0, 'sim:a', 0, 'completed', 1), (1, 'sim:b', 0, 'pending', 0)",
        ] {
            try old.query(statement)
        }
        let first = try PostgreSQLCampaignStore.open(uri: uri)
        let second = try PostgreSQLCampaignStore.open(uri: uri)
        #expect(try old.query("SELECT schema FROM campaign").first?.first == "2")
        let snapshot = try second.snapshot()
        #expect(snapshot.plan.selection == nil && snapshot.plan.minimumBattery == nil && snapshot.plan.window == nil)
        #expect(snapshot.devices.map(\.state) == [.completed, .pending])
        #expect(try first.claim(stage: 0, limit: 4, gateway: "g", lease: .seconds(60)).map(\.address) == ["sim:b"])
        #expect(try first.progress().stages.map(\.deferred) == [0])
    }
}
