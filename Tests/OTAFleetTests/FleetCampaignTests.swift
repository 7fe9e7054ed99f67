import Foundation
import OTACore
import OTAProtocolGeneric
import OTATransportSimulator
import Testing

/// 200 simulated devices behind one simulated adapter of 4 connections, in virtual time.
@Suite("Fleet campaign in the simulator")
struct FleetCampaignTests {
    /// An nRF52840 behind a central that fills whole connection events (as BlueZ does), so one
    /// link alone can use the adapter's whole airtime.
    static var profile: DeviceProfile {
        var profile = DeviceProfile.nrf52840
        profile.link.packetsPerEvent = nil
        return profile
    }

    static func image(_ size: Int, seed: UInt64) -> FirmwareImage {
        var random = seed
        var bytes = Data(capacity: size)
        for _ in 0..<size {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes.append(UInt8(truncatingIfNeeded: random >> 33))
        }
        return try! FirmwareImage(bytes: bytes)
    }

    struct Fleet: Sendable {
        let simulation: Simulation
        let adapter: SimulatedAdapter
        let devices: [SimulatedDevice]
        let image: FirmwareImage

        init(count: Int, limit: Int, imageSize: Int, seed: UInt64 = 17) {
            simulation = Simulation(seed: seed)
            adapter = SimulatedAdapter(name: "hci0", connectionLimit: limit)
            var devices: [SimulatedDevice] = []
            for index in 0..<count {
                devices.append(
                    SimulatedDevice(
                        profile: FleetCampaignTests.profile, model: GenericDeviceModel(), simulation: simulation,
                        address: String(format: "C0:FF:EE:00:%02X:%02X", index >> 8, index & 0xFF)
                    )
                )
            }
            self.devices = devices
            image = FleetCampaignTests.image(imageSize, seed: seed)
        }

        func fleetDevices() -> [FleetDevice] {
            devices.map { device in
                FleetDevice(
                    id: device.address, image: image, updateProtocol: GenericClient(),
                    connectors: [("hci0", SimulatedConnector(device: device, adapter: adapter))]
                )
            }
        }

        func run(claimedLimit: Int, policy: FleetPolicy = FleetPolicy()) async throws -> FleetReport {
            let scheduler = FleetScheduler(engine: UpdateEngine(clock: simulation.clock), policy: policy)
            let devices = fleetDevices()
            let adapters = [FleetAdapter(name: "hci0", connectionLimit: claimedLimit)]
            return try await simulation.run { await scheduler.run(devices, adapters: adapters) }
        }

        var identical: Int { devices.filter { $0.flash.read(0..<image.count) == (try? image.allBytes()) }.count }
    }

    @Test("200 devices, one adapter of 4: every image byte-identical, never over 4, within 10% of the airtime-bound schedule")
    func twoHundredDevices() async throws {
        let fleet = Fleet(count: 200, limit: 4, imageSize: 128 * 1024)
        let report = try await fleet.run(claimedLimit: 4)

        #expect(report.succeeded == 200)
        #expect(fleet.identical == 200)
        // Measured by the simulated controller, which refuses a fifth connection.
        #expect(fleet.adapter.peakConnections == 4)
        #expect(fleet.adapter.refusedConnects == 0)
        #expect(report.devices.allSatisfy { $0.attempts == 1 })

        // The ideal schedule for this airtime (decision 0031). The adapter's radio carries at
        // most one full-event link's goodput, whatever the number of links, so the 200 images
        // need totalBytes ÷ capacity of airtime, plus one device's time off the air (connection
        // setup, erase, round trips) that nothing can overlap: the first device's. And each of
        // the 4 connections updates 200 ÷ 4 devices one after another, each taking at least
        // what one device takes alone. The ideal is the larger of the two bounds.
        let chunk = try #require(report.devices.first?.update?.chunkSize)
        let capacity = Self.profile.link.theoreticalGoodput(valueLength: chunk)
        let perDeviceAirtime = Double(fleet.image.count) / capacity
        let alone = try await Fleet(count: 1, limit: 4, imageSize: fleet.image.count).run(claimedLimit: 4).duration.seconds
        let offAir = alone - perDeviceAirtime
        let airtimeBound = 200 * perDeviceAirtime + offAir
        let connectionBound = (200 / 4) * alone
        let ideal = max(airtimeBound, connectionBound)
        let actual = report.duration.seconds
        print(
            "fleet: 200 × \(fleet.image.count) B, chunk \(chunk), capacity \(Int(capacity)) B/s, one device alone \(alone) s (\(offAir) s off the air),"
                + " airtime bound \(airtimeBound) s, connection bound \(connectionBound) s, actual \(actual) s (\(actual / ideal) × ideal)"
        )
        #expect(actual >= airtimeBound * 0.99, "faster than the radio allows: the airtime is not shared")
        #expect(actual <= ideal * 1.10)
        // The radio was never booked beyond the time that passed.
        #expect(fleet.adapter.airtimeUsed.seconds <= actual * 1.001)
    }

    @Test("a scheduler that believes the adapter takes 8 is caught: the controller refuses the fifth connect")
    func ignoringTheLimitIsDetected() async throws {
        let fleet = Fleet(count: 12, limit: 4, imageSize: 4096)
        let report = try await fleet.run(claimedLimit: 8, policy: FleetPolicy(maximumAttempts: 1))

        #expect(fleet.adapter.peakConnections == 4)
        #expect(fleet.adapter.refusedConnects > 0)
        #expect(report.peakConnections["hci0"] == 8)
        let refused = report.failed.flatMap(\.failures).filter { "\($0)".contains("connection limit exceeded") }
        #expect(!refused.isEmpty)
    }

    @Test("a device that keeps failing is tried up to its limit and reported; the others complete")
    func keepsFailing() async throws {
        let fleet = Fleet(count: 10, limit: 4, imageSize: 8192)
        var faults = LinkFaults()
        faults.failFlashAtBytes = 4096
        fleet.devices[3].faults = faults
        let policy = FleetPolicy(maximumAttempts: 3, initialBackoff: .seconds(1))
        let report = try await fleet.run(claimedLimit: 4, policy: policy)

        #expect(report.succeeded == 9)
        let failed = try #require(report.failed.first)
        #expect(report.failed.count == 1)
        #expect(failed.id == fleet.devices[3].address)
        #expect(failed.attempts == 3)
        #expect(failed.failures.count == 3)
        #expect(fleet.identical == 9)
        #expect(fleet.adapter.peakConnections <= 4)
        // Two backoffs (1 s, then 2 s) lie between its first attempt's start and its last's end.
        #expect(failed.duration >= .seconds(3))
    }
}
