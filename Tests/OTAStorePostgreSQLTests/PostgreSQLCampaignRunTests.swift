import Foundation
import OTACore
import OTAProtocolGeneric
import OTATransportSimulator
import Synchronization
import Testing

@testable import OTAStorePostgreSQL

/// ``CampaignRunner`` with its state in PostgreSQL (a private cluster): the battery gate's
/// deferrals, rechecks and skips as the shared store records them.
///
/// In the store's suite, which is serialized: each test starts a cluster, blocking a thread of the
/// cooperative pool while `initdb` and `pg_ctl` run, and clusters started by suites running side
/// by side starved the pool long enough for a simulation elsewhere to see no progress for 2 s
/// (SQLiteLeaseTests.twoGateways failed with "simulation deadlock" in full runs).
extension PostgreSQLCampaignStoreTests {
    /// Simulated generic devices behind one adapter, in one simulation.
    final class Fleet: CampaignFleet {
        let simulation = Simulation(seed: 3)
        let adapter: SimulatedAdapter
        let devices: [String: SimulatedDevice]
        let addresses: [String]
        let image: FirmwareImage

        init(count: Int) throws {
            adapter = SimulatedAdapter(name: "hci0", connectionLimit: 2)
            addresses = (0..<count).map { String(format: "sim:pg-%02d", $0) }
            var devices: [String: SimulatedDevice] = [:]
            for address in addresses {
                devices[address] = SimulatedDevice(profile: .nrf52840, model: GenericDeviceModel(), simulation: simulation, address: address)
            }
            self.devices = devices
            image = try FirmwareImage(bytes: Data((0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }))
        }

        var adapters: [FleetAdapter] { [FleetAdapter(name: "hci0", connectionLimit: 2)] }

        func device(_ address: String) throws(OTAError) -> FleetDevice {
            guard let device = devices[address] else { throw OTAError(.invalidParameter, "no simulated device \(address)") }
            return FleetDevice(
                id: address, image: image, updateProtocol: GenericClient(), connectors: [("hci0", SimulatedConnector(device: device, adapter: adapter))])
        }

        func holdsImage(_ address: String) -> Bool { devices[address]!.flash.read(0..<image.count) == (try? image.allBytes()) }
    }

    @Test("one device charges after its deferral and is updated, one stays low and is skipped: both in the shared history, the campaign held")
    func deferralsInPostgreSQL() async throws {
        let cluster = try await PostgreSQLCluster.start()
        defer { cluster.stop() }
        let uri = try cluster.database("run")
        let fleet = try Fleet(count: 5)
        let (charging, low) = (fleet.addresses[1], fleet.addresses[3])
        fleet.devices[charging]!.batteryLevel = 20
        fleet.devices[low]!.batteryLevel = 9
        let plan = try CampaignPlan(
            name: "pg-gates", protocolName: "generic", image: CampaignImage(path: "image.bin", size: fleet.image.count, sha256: "-"),
            stages: [CampaignStage(name: "all", devices: fleet.addresses)], maximumAttempts: 1, minimumBattery: 25)
        let store = try PostgreSQLCampaignStore.create(uri: uri, plan: plan)
        let runner = CampaignRunner(engine: UpdateEngine(clock: fleet.simulation.clock), gateway: "pg-gw")
        let result = try await fleet.simulation.run { () async throws(OTAError) -> CampaignRunResult in
            try await runner.execute(store, fleet: fleet) { event in
                if case .deferred(let device, _, _) = event, device == charging { fleet.devices[charging]!.batteryLevel = 70 }
            }
        }
        // 4 of 5 updated (80%) is below the 90% success threshold only because of the skipped one: held, not aborted.
        #expect(result.stop == .batteryHeld(stage: 0))
        let snapshot = try PostgreSQLCampaignStore.open(uri: uri).snapshot()
        #expect(snapshot.phase == .running)
        #expect(snapshot.devices.map(\.state) == [.completed, .completed, .completed, .deferred, .completed])
        #expect(snapshot.devices[3].battery == 9 && snapshot.devices[3].attempts == 0)
        #expect(fleet.holdsImage(charging) && !fleet.holdsImage(low))
        let history = try store.history()
        func rows(_ device: String) -> [String] {
            history.filter { $0.device == device && ["started", "deferred", "completed", "failed"].contains($0.event) }.map {
                "\($0.event) \($0.attempt ?? 0) \($0.event == "deferred" ? $0.detail ?? "" : "")"
            }
        }
        #expect(rows(charging) == ["started 1 ", "deferred 1 battery 20% < 25%", "started 1 ", "completed 1 "])
        #expect(rows(low) == Array(repeating: ["started 1 ", "deferred 1 battery 9% < 25%"], count: 3).flatMap { $0 })
        #expect(history.allSatisfy { $0.gateway == nil || $0.gateway == "pg-gw" })
    }
}
