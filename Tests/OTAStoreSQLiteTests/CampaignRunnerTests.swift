import Foundation
import OTACore
import OTAProtocolGeneric
import OTATransportSimulator
import Synchronization
import Testing

@testable import OTAStoreSQLite

/// Campaigns run by ``CampaignRunner`` on simulated fleets, their state in a real SQLite file.
@Suite("Campaign runner")
struct CampaignRunnerTests {
    /// Simulated devices behind one simulated adapter, in one simulation.
    final class Fleet: CampaignFleet {
        let simulation: Simulation
        let adapter: SimulatedAdapter
        let devices: [String: SimulatedDevice]
        let addresses: [String]
        let image: FirmwareImage
        let limit: Int

        init(count: Int, limit: Int, imageSize: Int, seed: UInt64 = 5) {
            simulation = Simulation(seed: seed)
            adapter = SimulatedAdapter(name: "hci0", connectionLimit: limit)
            var profile = DeviceProfile.nrf52840
            profile.link.packetsPerEvent = nil
            var devices: [String: SimulatedDevice] = [:]
            var addresses: [String] = []
            for index in 0..<count {
                let address = String(format: "C0:FF:EE:00:%02X:%02X", index >> 8, index & 0xFF)
                devices[address] = SimulatedDevice(profile: profile, model: GenericDeviceModel(), simulation: simulation, address: address)
                addresses.append(address)
            }
            self.devices = devices
            self.addresses = addresses
            self.limit = limit
            var random = seed
            image = try! FirmwareImage(
                bytes: Data(
                    (0..<imageSize).map { _ in
                        random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        return UInt8(truncatingIfNeeded: random >> 33)
                    }))
        }

        var adapters: [FleetAdapter] { [FleetAdapter(name: "hci0", connectionLimit: limit)] }

        func device(_ address: String) throws(OTAError) -> FleetDevice {
            guard let device = devices[address] else { throw OTAError(.invalidParameter, "no simulated device \(address)") }
            return FleetDevice(
                id: address, image: image, updateProtocol: GenericClient(), connectors: [("hci0", SimulatedConnector(device: device, adapter: adapter))])
        }

        func holdsImage(_ address: String) -> Bool { devices[address]!.flash.read(0..<image.count) == (try? image.allBytes()) }

        func plan(stages: [Double] = [100], attempts: Int = 3, abortAt: Double = 0.2, threshold: Double = 0.9) throws -> CampaignPlan {
            try CampaignPlan(
                name: "fleet", protocolName: "generic", image: CampaignImage(path: "image.bin", size: image.count, sha256: "-"),
                stages: CampaignPlan.stages(of: addresses, endingAt: stages), maximumAttempts: attempts, abortFailureRate: abortAt,
                successThreshold: threshold)
        }

        func run(
            _ store: any CampaignStore, gateway: String = "test", leaseClock: any CampaignLeaseClock = WallLeaseClock()
        ) async throws -> CampaignSnapshot {
            let runner = CampaignRunner(
                engine: UpdateEngine(clock: simulation.clock), backoff: FleetPolicy(initialBackoff: .seconds(1)), gateway: gateway,
                leaseClock: leaseClock)
            return try await simulation.run { () async throws(OTAError) -> CampaignSnapshot in try await runner.run(store, fleet: self) }
        }
    }

    static func store(_ plan: CampaignPlan) throws -> (SQLiteCampaignStore, String) {
        let path = SQLiteCampaignStoreTests.temporaryPath()
        return (try SQLiteCampaignStore.create(at: path, plan: plan), path)
    }

    static func completions(_ store: SQLiteCampaignStore) throws -> [String: Int] {
        try store.history().filter { $0.event == "completed" }.reduce(into: [:]) { $0[$1.device ?? "", default: 0] += 1 }
    }

    @Test("200 devices, one adapter of 4, three stages: every image byte-identical, never over 4, one completion each in the history")
    func twoHundredDevices() async throws {
        let fleet = Fleet(count: 200, limit: 4, imageSize: 16 * 1024)
        let (store, path) = try Self.store(try fleet.plan(stages: [5, 50, 100]))
        defer { SQLiteCampaignStoreTests.remove(path) }
        let result = try await fleet.run(store)

        #expect(result.phase == .completed)
        #expect(result.phaseDetail == "200 of 200 devices updated")
        #expect(result.stages.map(\.completed) == [10, 90, 100])
        #expect(fleet.addresses.allSatisfy(fleet.holdsImage))
        #expect(fleet.adapter.peakConnections == 4)
        #expect(fleet.adapter.refusedConnects == 0)
        let completions = try Self.completions(store)
        #expect(completions.count == 200 && completions.values.allSatisfy { $0 == 1 })
        // Stages in order: no device of a stage started before every device of the one before ended.
        let history = try store.history()
        let stageOf = Dictionary(uniqueKeysWithValues: result.devices.map { ($0.address, $0.stage) })
        var finished = Set<Int>()
        var highestStarted = 0
        for entry in history where entry.device != nil {
            let stage = stageOf[entry.device!]!
            if entry.event == "started" {
                #expect(stage >= highestStarted)
                highestStarted = stage
            }
            if entry.event == "completed" { finished.insert(stage) }
        }
        #expect(finished == [0, 1, 2])
    }

    @Test("a stage whose devices fail stops the campaign at the abort threshold; later stages are not touched")
    func stagedRolloutAborts() async throws {
        let fleet = Fleet(count: 40, limit: 4, imageSize: 8192)
        // Stage 2 is devices 4..<20: make 5 of its 16 fail for good (31% > 20%).
        for index in [5, 7, 9, 11, 13] {
            var faults = LinkFaults()
            faults.failFlashAtBytes = 2048
            fleet.devices[fleet.addresses[index]]!.faults = faults
        }
        let (store, path) = try Self.store(try fleet.plan(stages: [10, 50, 100], attempts: 2))
        defer { SQLiteCampaignStoreTests.remove(path) }
        let result = try await fleet.run(store)

        #expect(result.phase == .aborted)
        let detail = try #require(result.phaseDetail)
        #expect(detail.contains("stage 2 (up to 50%): 5 of 16 devices failed (31.3%), above the abort threshold of 20%; later stages not started"), "\(detail)")
        #expect(result.stages.map(\.completed) == [4, 11, 0])
        #expect(result.stages.map(\.failed) == [0, 5, 0])
        // Each failing device had exactly its 2 attempts; stage 3 none.
        #expect(result.devices.filter { $0.state == .failed }.allSatisfy { $0.attempts == 2 })
        #expect(result.devices.filter { $0.stage == 2 }.allSatisfy { $0.attempts == 0 && $0.state == .pending })
        #expect(fleet.addresses[20...].allSatisfy { !fleet.holdsImage($0) })
        // Running it again does nothing: the campaign has ended.
        let again = try await fleet.run(try SQLiteCampaignStore.open(path))
        #expect(again == result)
    }

    @Test("a stage below its success threshold stops the campaign even when failures are under the abort rate")
    func successThreshold() async throws {
        let fleet = Fleet(count: 10, limit: 4, imageSize: 4096)
        var faults = LinkFaults()
        faults.failFlashAtBytes = 1024
        fleet.devices[fleet.addresses[0]]!.faults = faults
        let (store, path) = try Self.store(try fleet.plan(stages: [50, 100], attempts: 1, abortAt: 0.5, threshold: 0.9))
        defer { SQLiteCampaignStoreTests.remove(path) }
        let result = try await fleet.run(store)
        #expect(result.phase == .aborted)
        #expect(result.phaseDetail?.contains("4 of 5 devices updated (80%), below the 90% needed to go on") == true)
    }

    @Test("attempts a killed gateway left open are taken over once its leases expire: each counts as one attempt and is retried")
    func interruptedAttempt() async throws {
        let fleet = Fleet(count: 6, limit: 2, imageSize: 4096)
        let clock = ManualLeaseClock()
        let path = SQLiteCampaignStoreTests.temporaryPath()
        defer { SQLiteCampaignStoreTests.remove(path) }
        let store = try SQLiteCampaignStore.create(at: path, plan: try fleet.plan(attempts: 2), leaseClock: clock)
        // What a gateway killed during these attempts leaves behind: two devices leased to it for 30 s.
        #expect(try store.claim(stage: 0, limit: 2, gateway: "killed", lease: .seconds(30)).count == 2)
        try store.attemptStarted(device: fleet.addresses[0], attempt: 1, gateway: "killed")
        try store.attemptStarted(device: fleet.addresses[1], attempt: 1, gateway: "killed")
        try store.attemptFinished(device: fleet.addresses[1], attempt: 1, gateway: "killed", outcome: .failed(message: "link lost", final: false))
        // Its next claim took device 1 again (a claim takes fewest attempts first, so lease it by hand).
        try SQLiteDatabase(path: path, create: false).query(
            "UPDATE device SET lease_owner = 'killed', lease_expires = ? WHERE address = ?",
            [.real(clock.now.timeIntervalSince1970 + 30), .text(fleet.addresses[1])])
        try store.attemptStarted(device: fleet.addresses[1], attempt: 2, gateway: "killed")

        let result = try await fleet.run(try SQLiteCampaignStore.open(path, leaseClock: clock), leaseClock: clock)
        // Not before the leases expired, on the lease clock.
        #expect(clock.elapsed >= 30)
        #expect(result.devices[0].state == .completed && result.devices[0].attempts == 2)
        // Its second attempt was its last: the open one is its failure, and it is not tried again.
        #expect(result.devices[1].state == .failed && result.devices[1].attempts == 2)
        #expect(result.devices[1].lastError == "the previous run stopped during this attempt")
        #expect(result.devices[2...].allSatisfy { $0.state == .completed && $0.attempts == 1 })
        #expect(try Self.completions(store).values.allSatisfy { $0 == 1 })
        #expect(fleet.holdsImage(fleet.addresses[0]) && !fleet.holdsImage(fleet.addresses[1]))
        let takeovers = try store.history().filter { $0.event == "taken-over" }
        #expect(Set(takeovers.compactMap(\.device)) == Set(fleet.addresses[0...1]))
        #expect(takeovers.allSatisfy { $0.detail == "killed" && $0.gateway == "test" })
    }

    /// A store whose writes start failing after a number of calls, as a full disk would.
    final class FailingStore: CampaignStore {
        let inner: SQLiteCampaignStore
        let writesAllowed: Int
        private let writes = Mutex(0)

        init(_ inner: SQLiteCampaignStore, writesAllowed: Int) {
            self.inner = inner
            self.writesAllowed = writesAllowed
        }

        private func write() throws(OTAError) {
            let count = writes.withLock { (value: inout Int) -> Int in
                value += 1
                return value
            }
            if count > writesAllowed { throw OTAError(.storage, "disk full") }
        }

        func snapshot() throws(OTAError) -> CampaignSnapshot { try inner.snapshot() }
        func claim(stage: Int, limit: Int, gateway: String, lease: Duration, includingDeferred: Bool) throws(OTAError) -> [CampaignDeviceRecord] {
            try inner.claim(stage: stage, limit: limit, gateway: gateway, lease: lease, includingDeferred: includingDeferred)
        }
        func renew(gateway: String, lease: Duration) throws(OTAError) -> Int { try inner.renew(gateway: gateway, lease: lease) }
        func attemptStarted(device: String, attempt: Int, gateway: String) throws(OTAError) {
            try write()
            try inner.attemptStarted(device: device, attempt: attempt, gateway: gateway)
        }
        func attemptFinished(device: String, attempt: Int, gateway: String, outcome: CampaignAttemptOutcome) throws(OTAError) {
            try write()
            try inner.attemptFinished(device: device, attempt: attempt, gateway: gateway, outcome: outcome)
        }
        func attemptDeferred(device: String, attempt: Int, gateway: String, battery: BatteryBelowMinimum) throws(OTAError) {
            try write()
            try inner.attemptDeferred(device: device, attempt: attempt, gateway: gateway, battery: battery)
        }
        func finish(_ phase: CampaignPhase, detail: String, gateway: String) throws(OTAError) {
            try write()
            try inner.finish(phase, detail: detail, gateway: gateway)
        }
        func history() throws(OTAError) -> [CampaignHistoryEntry] { try inner.history() }
    }

    @Test("a store that fails stops the run with its error; the file still resumes to every device updated once")
    func failingStore() async throws {
        let fleet = Fleet(count: 12, limit: 3, imageSize: 4096)
        let (store, path) = try Self.store(try fleet.plan())
        defer { SQLiteCampaignStoreTests.remove(path) }
        let error = await #expect(throws: OTAError.self) { try await fleet.run(FailingStore(store, writesAllowed: 9)) }
        #expect(error?.message == "disk full")
        let stopped = try store.snapshot()
        #expect(stopped.phase == .running)
        #expect(stopped.devices.contains { $0.state == .pending })

        let result = try await fleet.run(try SQLiteCampaignStore.open(path))
        #expect(result.phase == .completed)
        #expect(fleet.addresses.allSatisfy(fleet.holdsImage))
        #expect(try Self.completions(store).count == 12)
        #expect(try Self.completions(store).values.allSatisfy { $0 == 1 })
    }
}
