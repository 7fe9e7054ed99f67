import Foundation
import OTACore
import Testing

@testable import OTAStoreSQLite

/// The SQLite campaign file: what is written is what is read back, by another opening too, and
/// a file that is not a campaign gets one line.
@Suite("SQLite campaign store")
struct SQLiteCampaignStoreTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("ota-campaign-\(UUID().uuidString).db").path
    }

    static func plan(devices: Int = 10, stages: [Double] = [20, 100], attempts: Int = 3) throws -> CampaignPlan {
        let addresses = (0..<devices).map { String(format: "sim:dev-%03d", $0) }
        return try CampaignPlan(
            name: "test", protocolName: "generic", image: CampaignImage(path: "/tmp/image.bin", size: 4096, sha256: String(repeating: "ab", count: 32)),
            stages: CampaignPlan.stages(of: addresses, endingAt: stages), maximumAttempts: attempts, abortFailureRate: 0.25, successThreshold: 0.5)
    }

    static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    @Test("a created campaign reads back as planned, every device pending, from a second opening")
    func roundTrip() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let plan = try Self.plan()
        _ = try SQLiteCampaignStore.create(at: path, plan: plan)
        let snapshot = try SQLiteCampaignStore.open(path).snapshot()
        #expect(snapshot.plan == plan)
        #expect(snapshot.phase == .running)
        #expect(snapshot.devices.map(\.address) == plan.devices)
        #expect(snapshot.devices.allSatisfy { $0.state == .pending && $0.attempts == 0 })
        #expect(snapshot.stages.map(\.devices) == [2, 8])
    }

    @Test("attempts move a device through updating, pending (retry), completed or failed, each in the history")
    func transitions() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let store = try SQLiteCampaignStore.create(at: path, plan: try Self.plan())
        #expect(try store.claim(stage: 0, limit: 2, gateway: "g1", lease: .seconds(60)).map(\.address) == ["sim:dev-000", "sim:dev-001"])
        try store.attemptStarted(device: "sim:dev-000", attempt: 1, gateway: "g1")
        #expect(try store.snapshot().devices[0].state == .updating)
        try store.attemptFinished(device: "sim:dev-000", attempt: 1, gateway: "g1", outcome: .failed(message: "link lost", final: false))
        // The attempt's end released the device: it is claimed again for the next one.
        #expect(try store.snapshot().devices[0].gateway == nil)
        #expect(try store.claim(stage: 0, limit: 2, gateway: "g1", lease: .seconds(60)).map(\.address) == ["sim:dev-001", "sim:dev-000"])
        try store.attemptStarted(device: "sim:dev-000", attempt: 2, gateway: "g1")
        try store.attemptFinished(device: "sim:dev-000", attempt: 2, gateway: "g1", outcome: .completed(detail: "4096 bytes"))
        try store.attemptStarted(device: "sim:dev-001", attempt: 1, gateway: "g1")
        try store.attemptFinished(device: "sim:dev-001", attempt: 1, gateway: "g1", outcome: .failed(message: "flash error", final: true))

        let devices = try SQLiteCampaignStore.open(path).snapshot().devices
        #expect(devices[0] == CampaignDeviceRecord(address: "sim:dev-000", stage: 0, state: .completed, attempts: 2, lastError: nil))
        #expect(devices[1] == CampaignDeviceRecord(address: "sim:dev-001", stage: 0, state: .failed, attempts: 1, lastError: "flash error"))
        let history = try store.history()
        let events = history.filter { $0.event != "leased" }.map { "\($0.device ?? "-") \($0.event) \($0.attempt.map(String.init) ?? "-")" }
        #expect(
            events == [
                "- created -", "sim:dev-000 started 1", "sim:dev-000 retry 1", "sim:dev-000 started 2", "sim:dev-000 completed 2",
                "sim:dev-001 started 1", "sim:dev-001 failed 1",
            ])
        #expect(history.filter { $0.event == "leased" }.count == 4)
        // The counts a runner reads between batches agree with the whole snapshot.
        let snapshot = try store.snapshot()
        #expect(try store.progress() == CampaignProgress(phase: .running, stages: snapshot.stages))
        #expect(snapshot.stages.map(\.completed) == [1, 0] && snapshot.stages.map(\.failed) == [1, 0])
        #expect(history.dropFirst().allSatisfy { $0.gateway == "g1" })
    }

    @Test("an unknown device is refused and changes nothing")
    func unknownDevice() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let store = try SQLiteCampaignStore.create(at: path, plan: try Self.plan())
        let error = #expect(throws: OTAError.self) { try store.attemptStarted(device: "sim:nobody", attempt: 1, gateway: "g1") }
        #expect(error?.code == .storage)
        #expect(error?.message.contains("no device sim:nobody") == true)
        #expect(try store.history().count == 1)
    }

    @Test("an existing file is not overwritten; a missing one, a non-SQLite file and another SQLite database each get one line")
    func refusals() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        _ = try SQLiteCampaignStore.create(at: path, plan: try Self.plan())
        let again = #expect(throws: OTAError.self) { try SQLiteCampaignStore.create(at: path, plan: try Self.plan()) }
        #expect(again?.message.contains("exists already") == true)

        let missing = #expect(throws: OTAError.self) { try SQLiteCampaignStore.open(path + ".missing") }
        #expect(missing?.message.contains("no such campaign file") == true)

        let garbage = Self.temporaryPath()
        defer { Self.remove(garbage) }
        try Data(repeating: 0x41, count: 5000).write(to: URL(fileURLWithPath: garbage))
        let notSQLite = #expect(throws: OTAError.self) { try SQLiteCampaignStore.open(garbage) }
        #expect(notSQLite?.code == .storage)
        #expect(notSQLite?.message.contains("is not a campaign file") == true)

        let other = Self.temporaryPath()
        defer { Self.remove(other) }
        let database = try SQLiteDatabase(path: other, create: true)
        try database.execute("CREATE TABLE notes (text TEXT)")
        let notCampaign = #expect(throws: OTAError.self) { try SQLiteCampaignStore.open(other) }
        #expect(notCampaign?.message.contains("is not a campaign file") == true)
        for message in [again, missing, notSQLite, notCampaign].compactMap({ $0?.message }) {
            #expect(!message.contains("\n"))
        }
    }

    @Test("a campaign file of another layout version is refused by name")
    func otherVersion() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        _ = try SQLiteCampaignStore.create(at: path, plan: try Self.plan())
        try SQLiteDatabase(path: path, create: false).query("UPDATE campaign SET schema = 99")
        let error = #expect(throws: OTAError.self) { try SQLiteCampaignStore.open(path) }
        #expect(error?.message.contains("layout 99") == true)
    }

    @Test("a damaged row is reported as damage, not a crash")
    func damagedRow() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let store = try SQLiteCampaignStore.create(at: path, plan: try Self.plan())
        try SQLiteDatabase(path: path, create: false).query("UPDATE device SET state = 'exploded' WHERE position = 3")
        let error = #expect(throws: OTAError.self) { try store.snapshot() }
        #expect(error?.message.contains("damaged") == true)
    }

    @Test("stages split the device list at cumulative percentages; bad ones are refused")
    func stageSplitting() throws {
        let devices = (0..<10).map { "d\($0)" }
        let stages = try CampaignPlan.stages(of: devices, endingAt: [10, 50, 100])
        #expect(stages.map(\.devices.count) == [1, 4, 5])
        #expect(stages.map(\.name) == ["1 (up to 10%)", "2 (up to 50%)", "3 (up to 100%)"])
        // Too few devices for the first stage: it is left out, not empty.
        #expect(try CampaignPlan.stages(of: ["a", "b"], endingAt: [10, 100]).map(\.devices) == [["a", "b"]])
        #expect(throws: OTAError.self) { try CampaignPlan.stages(of: devices, endingAt: [50, 20]) }
        #expect(throws: OTAError.self) { try CampaignPlan.stages(of: devices, endingAt: [0, 100]) }
        #expect(throws: OTAError.self) { try CampaignPlan.stages(of: devices, endingAt: [150]) }
        #expect(throws: OTAError.self) {
            try CampaignPlan(
                name: "x", protocolName: "generic", image: CampaignImage(path: "", size: 1, sha256: ""),
                stages: [CampaignStage(name: "a", devices: ["d1"]), CampaignStage(name: "b", devices: ["d1"])])
        }
    }
}
