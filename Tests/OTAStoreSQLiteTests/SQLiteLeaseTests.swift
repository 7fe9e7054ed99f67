import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTAStoreSQLite

/// Leases in the SQLite store: a device is claimed by one gateway at a time, kept by heartbeats,
/// taken over once its lease expires, and a gateway that lost a lease cannot record on it. The
/// lease clock is moved by hand.
@Suite("SQLite campaign leases")
struct SQLiteLeaseTests {
    static func store(devices: Int = 10, attempts: Int = 3) throws -> (SQLiteCampaignStore, ManualLeaseClock, String) {
        let path = SQLiteCampaignStoreTests.temporaryPath()
        let clock = ManualLeaseClock()
        let store = try SQLiteCampaignStore.create(
            at: path, plan: try SQLiteCampaignStoreTests.plan(devices: devices, stages: [100], attempts: attempts), leaseClock: clock)
        return (store, clock, path)
    }

    @Test("two gateways claiming the same stage get different devices, until none is left")
    func claimsAreExclusive() throws {
        let (store, _, path) = try Self.store()
        defer { SQLiteCampaignStoreTests.remove(path) }
        // A second opening of the file, as a second process would have.
        let other = try SQLiteCampaignStore.open(path, leaseClock: ManualLeaseClock())
        let first = try store.claim(stage: 0, limit: 4, gateway: "g1", lease: .seconds(30)).map(\.address)
        let second = try other.claim(stage: 0, limit: 4, gateway: "g2", lease: .seconds(30)).map(\.address)
        let third = try other.claim(stage: 0, limit: 4, gateway: "g3", lease: .seconds(30)).map(\.address)
        #expect(first.count == 4 && second.count == 4 && third.count == 2)
        #expect(Set(first + second + third).count == 10)
        #expect(try store.claim(stage: 0, limit: 4, gateway: "g4", lease: .seconds(30)).isEmpty)
        // A gateway claiming again under its own name gets its own leases back (a restarted gateway).
        #expect(try store.claim(stage: 0, limit: 4, gateway: "g1", lease: .seconds(30)).map(\.address) == first)
        #expect(try store.snapshot().devices.filter { $0.gateway == "g2" }.map(\.address) == second)
    }

    @Test("an expired lease is taken over; its open attempt counts as failed; the gateway that lost it cannot record")
    func takeoverAfterExpiry() throws {
        let (store, clock, path) = try Self.store(devices: 2, attempts: 3)
        defer { SQLiteCampaignStoreTests.remove(path) }
        let device = try #require(try store.claim(stage: 0, limit: 1, gateway: "g1", lease: .seconds(10)).first).address
        try store.attemptStarted(device: device, attempt: 1, gateway: "g1")
        clock.advance(9)
        // Not yet expired: the other device only.
        #expect(try store.claim(stage: 0, limit: 2, gateway: "g2", lease: .seconds(10)).map(\.address) == ["sim:dev-001"])
        clock.advance(2)
        let taken = try store.claim(stage: 0, limit: 2, gateway: "g2", lease: .seconds(10))
        // Fewest attempts first: the untouched device, then the one whose attempt was left open.
        #expect(taken.map(\.address) == ["sim:dev-001", device])
        #expect(taken[1].attempts == 1 && taken[1].state == .pending && taken[1].lastError == CampaignRunner.stoppedDuringAttempt)

        let lost = #expect(throws: OTAError.self) {
            try store.attemptFinished(device: device, attempt: 1, gateway: "g1", outcome: .completed(detail: "late"))
        }
        #expect(lost?.code == .storage)
        #expect(lost?.message.contains("gateway g1 no longer holds the lease on \(device) (it is leased to g2)") == true)
        #expect(lost?.message.contains("\n") == false)
        #expect(throws: OTAError.self) { try store.attemptStarted(device: device, attempt: 2, gateway: "g1") }
        let record = try store.snapshot().devices[0]
        #expect(record.state == .pending && record.gateway == "g2")

        let history = try store.history().filter { $0.device == device }.map { "\($0.event) \($0.gateway ?? "-") \($0.detail ?? "-")" }
        #expect(history == ["leased g1 -", "started g1 g1", "taken-over g2 g1", "retry g2 \(CampaignRunner.stoppedDuringAttempt)", "leased g2 -"])
    }

    @Test("renewals keep a lease past its first expiry; an expired lease is not renewed")
    func renewal() throws {
        let (store, clock, path) = try Self.store(devices: 1)
        defer { SQLiteCampaignStoreTests.remove(path) }
        _ = try store.claim(stage: 0, limit: 1, gateway: "g1", lease: .seconds(10))
        clock.advance(8)
        #expect(try store.renew(gateway: "g1", lease: .seconds(10)) == 1)
        #expect(try store.renew(gateway: "g2", lease: .seconds(10)) == 0)
        clock.advance(8)
        #expect(try store.claim(stage: 0, limit: 1, gateway: "g2", lease: .seconds(10)).isEmpty)
        clock.advance(3)
        #expect(try store.renew(gateway: "g1", lease: .seconds(10)) == 0)
        #expect(try store.claim(stage: 0, limit: 1, gateway: "g2", lease: .seconds(10)).count == 1)
        let renewed = try store.history().filter { $0.event == "renewed" }
        #expect(renewed.count == 1)
        #expect(renewed.first?.leaseUntil == Date(timeIntervalSince1970: 1_800_000_018))
    }

    @Test("the heartbeat renews every third of the lease on its clock until stopped")
    func heartbeat() async throws {
        let (store, _, path) = try Self.store(devices: 3)
        defer { SQLiteCampaignStoreTests.remove(path) }
        _ = try store.claim(stage: 0, limit: 2, gateway: "g1", lease: .seconds(9))
        /// Moves on by each wait, and stops the heartbeat after 3 of them.
        final class CountingClock: CampaignLeaseClock {
            let inner = ManualLeaseClock()
            let waits = Mutex<[Double]>([])
            var now: Date { inner.now }
            func sleep(for duration: Duration) async throws {
                let count = waits.withLock { (waits: inout [Double]) -> Int in
                    waits.append(duration.seconds)
                    return waits.count
                }
                if count > 3 { throw CancellationError() }
                try await inner.sleep(for: duration)
            }
        }
        let clock = CountingClock()
        // The store's clock is another one: renewals are taken at its time, not the heartbeat's.
        let beats = await CampaignHeartbeat(store: store, gateway: "g1", lease: .seconds(9), clock: clock).run()
        #expect(beats == 3)
        #expect(clock.waits.withLock { $0 } == [3, 3, 3, 3])
        #expect(try store.history().filter { $0.event == "renewed" }.count == 6)
    }

    @Test("a campaign finished by one gateway keeps that verdict when another finishes it too")
    func firstVerdictKept() throws {
        let (store, _, path) = try Self.store(devices: 1)
        defer { SQLiteCampaignStoreTests.remove(path) }
        try store.finish(.completed, detail: "1 of 1 devices updated", gateway: "g1")
        try store.finish(.aborted, detail: "late", gateway: "g2")
        let snapshot = try store.snapshot()
        #expect(snapshot.phase == .completed && snapshot.phaseDetail == "1 of 1 devices updated")
        #expect(try store.history().filter { $0.event.hasPrefix("campaign-") }.map(\.gateway) == ["g1"])
        #expect(try store.claim(stage: 0, limit: 1, gateway: "g3", lease: .seconds(10)).isEmpty)
    }

    @Test("two gateways run one campaign from one file at once: each device updated once, by one of them")
    func twoGateways() async throws {
        let first = CampaignRunnerTests.Fleet(count: 60, limit: 3, imageSize: 4096, seed: 11)
        // The same addresses and image in a second simulation: the devices as the second gateway reaches them.
        let second = CampaignRunnerTests.Fleet(count: 60, limit: 3, imageSize: 4096, seed: 11)
        let path = SQLiteCampaignStoreTests.temporaryPath()
        defer { SQLiteCampaignStoreTests.remove(path) }
        _ = try SQLiteCampaignStore.create(at: path, plan: try first.plan(stages: [20, 100]))
        // Three devices of the first stage are leased to g2 before either runs: g1 cannot take them
        // while the lease lasts, and g2 takes its own back at once, so both gateways must update
        // devices whatever the machine's load (left to timing, one gateway took all 60 in CI).
        #expect(try SQLiteCampaignStore.open(path).claim(stage: 0, limit: 3, gateway: "g2", lease: .seconds(120)).count == 3)
        async let a = first.run(try SQLiteCampaignStore.open(path), gateway: "g1")
        async let b = second.run(try SQLiteCampaignStore.open(path), gateway: "g2")
        let results = try await [a, b]
        #expect(results.allSatisfy { $0.phase == .completed })
        let history = try SQLiteCampaignStore.open(path).history()
        var byDevice: [String: [String]] = [:]
        for entry in history where entry.event == "completed" { byDevice[entry.device!, default: []].append(entry.gateway!) }
        #expect(byDevice.count == 60 && byDevice.values.allSatisfy { $0.count == 1 })
        for (device, gateways) in byDevice {
            let fleet = gateways[0] == "g1" ? first : second
            #expect(fleet.holdsImage(device), "\(device)")
        }
        let starts = history.filter { $0.event == "started" }
        #expect(Set(starts.compactMap(\.gateway)) == ["g1", "g2"], "both gateways updated devices")
        #expect(history.filter { $0.event.hasPrefix("campaign-") }.count == 1)
    }
}
