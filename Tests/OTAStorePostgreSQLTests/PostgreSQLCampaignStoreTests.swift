import Foundation
import OTACore
import Testing

@testable import OTAStorePostgreSQL

/// The PostgreSQL campaign store against a real server: a private cluster per test.
@Suite(.serialized, .enabled(if: PostgreSQLCluster.unavailable == nil, "\(PostgreSQLCluster.unavailable ?? "")"))
struct PostgreSQLCampaignStoreTests {
    static func plan(devices: Int, attempts: Int = 3) throws -> CampaignPlan {
        try CampaignPlan(
            name: "pg", protocolName: "generic", image: CampaignImage(path: "/tmp/image.bin", size: 4096, sha256: String(repeating: "cd", count: 32)),
            stages: CampaignPlan.stages(of: (0..<devices).map { String(format: "sim:dev-%03d", $0) }, endingAt: [20, 100]),
            maximumAttempts: attempts, abortFailureRate: 0.25, successThreshold: 0.5)
    }

    @Test("round trip, claims that skip locked rows, leases on the server's clock, lease loss refused, the first verdict kept")
    func storeSemantics() async throws {
        let cluster = try await PostgreSQLCluster.start()
        defer { cluster.stop() }
        let uri = try cluster.database("semantics")
        let plan = try Self.plan(devices: 10, attempts: 2)
        let store = try PostgreSQLCampaignStore.create(uri: uri, plan: plan)
        let other = try PostgreSQLCampaignStore.open(uri: uri)
        let snapshot = try other.snapshot()
        #expect(snapshot.plan == plan && snapshot.phase == .running)
        #expect(snapshot.devices.map(\.address) == plan.devices && snapshot.devices.allSatisfy { $0.state == .pending && $0.gateway == nil })

        // Stage 2 (index 1: devices 2 to 9): rows another transaction has locked are skipped, not waited for.
        let locker = try PostgreSQLConnection(uri: uri)
        try locker.query("BEGIN")
        try locker.query("SELECT * FROM device WHERE position IN (2, 3) FOR UPDATE")
        let first = try store.claim(stage: 1, limit: 4, gateway: "g1", lease: .seconds(60)).map(\.address)
        #expect(first == ["sim:dev-004", "sim:dev-005", "sim:dev-006", "sim:dev-007"])
        try locker.query("ROLLBACK")
        let second = try other.claim(stage: 1, limit: 8, gateway: "g2", lease: .seconds(60)).map(\.address)
        #expect(second == ["sim:dev-002", "sim:dev-003", "sim:dev-008", "sim:dev-009"])
        #expect(try store.claim(stage: 1, limit: 8, gateway: "g3", lease: .seconds(60)).isEmpty)
        #expect(try store.claim(stage: 1, limit: 8, gateway: "g1", lease: .seconds(60)).map(\.address) == first, "its own leases, back")

        // A short lease on the server's clock: taken over once it expired, and the loser cannot record.
        let device = try #require(try store.claim(stage: 0, limit: 1, gateway: "g1", lease: .milliseconds(500)).first).address
        try store.attemptStarted(device: device, attempt: 1, gateway: "g1")
        #expect(try other.claim(stage: 0, limit: 1, gateway: "g2", lease: .seconds(60)).map(\.address) == ["sim:dev-001"])
        try await Task.sleep(for: .milliseconds(1200))  // the lease expires on the server's clock
        #expect(try store.renew(gateway: "g1", lease: .seconds(60)) == 4, "the expired lease is not renewed; the 4 long ones are")
        // Its own device back, then the expired one (fewest attempts first).
        let taken = try other.claim(stage: 0, limit: 2, gateway: "g2", lease: .seconds(60))
        #expect(taken.map(\.address) == ["sim:dev-001", device])
        #expect(taken.last?.lastError == CampaignRunner.stoppedDuringAttempt && taken.last?.attempts == 1)
        let lost = #expect(throws: OTAError.self) {
            try store.attemptFinished(device: device, attempt: 1, gateway: "g1", outcome: .completed(detail: "late"))
        }
        #expect(lost?.code == .storage)
        #expect(lost?.message.contains("gateway g1 no longer holds the lease on \(device) (it is leased to g2)") == true, "\(lost?.message ?? "")")
        try other.attemptStarted(device: device, attempt: 2, gateway: "g2")
        try other.attemptFinished(device: device, attempt: 2, gateway: "g2", outcome: .completed(detail: "4096 bytes"))
        let record = try store.snapshot().devices[0]
        #expect(record == CampaignDeviceRecord(address: device, stage: 0, state: .completed, attempts: 2, lastError: nil))
        let rows = try store.history().filter { $0.device == device }.map { "\($0.event) \($0.gateway ?? "-")" }
        #expect(rows == ["leased g1", "started g1", "taken-over g2", "retry g2", "leased g2", "started g2", "completed g2"])

        let counted = try store.snapshot()
        #expect(try store.progress() == CampaignProgress(phase: .running, stages: counted.stages))
        #expect(counted.stages.map(\.completed) == [1, 0] && counted.stages.map(\.devices) == [2, 8])
        try store.finish(.aborted, detail: "first", gateway: "g1")
        try other.finish(.completed, detail: "second", gateway: "g2")
        #expect(try other.snapshot().phaseDetail == "first")
        #expect(try other.claim(stage: 1, limit: 8, gateway: "g4", lease: .seconds(60)).isEmpty)

        // Refusals, each one line.
        let again = #expect(throws: OTAError.self) { try PostgreSQLCampaignStore.create(uri: uri, plan: plan) }
        #expect(again?.message.contains("holds a campaign already") == true)
        let empty = try cluster.database("empty")
        let none = #expect(throws: OTAError.self) { try PostgreSQLCampaignStore.open(uri: empty) }
        #expect(none?.message.contains("holds no campaign") == true)
        try PostgreSQLConnection(uri: uri).query("UPDATE campaign SET schema = 99")
        let version = #expect(throws: OTAError.self) { try PostgreSQLCampaignStore.open(uri: uri) }
        #expect(version?.message.contains("layout 99") == true)
        let unreachable = #expect(throws: OTAError.self) {
            try PostgreSQLCampaignStore.open(uri: "postgresql://ota:secret@/nothing?host=\(cluster.directory.path)/missing")
        }
        #expect(unreachable?.message.contains("cannot connect to the campaign database") == true)
        #expect(unreachable?.message.contains("secret") == false, "the password is masked")
        for message in [lost, again, none, version, unreachable].compactMap({ $0?.message }) {
            #expect(!message.contains("\n"), "\(message)")
        }
    }
}
