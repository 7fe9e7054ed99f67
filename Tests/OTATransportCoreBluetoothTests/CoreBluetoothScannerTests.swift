// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolFramed
import OTAProtocolGeneric
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

/// Scanning through the transport's own central.
@Suite struct CoreBluetoothScannerTests {
    @Test func aServiceFilterReportsOnlyMatchingPeripheralsWithTheirAdvertisement() async throws {
        let world = StandInWorld(seed: 9)
        let generic = GenericDeviceModel()
        let framed = FramedDeviceModel()
        let lock = world.addPeripheral(
            SimulatedDevice(profile: .esp32S3MTU244TwoM, model: generic, simulation: world.simulation), name: "lock", rssi: -48,
            manufacturerData: Data([0x59, 0x00, 0x01, 0x02]))
        world.addPeripheral(SimulatedDevice(profile: .nrf52840, model: framed, simulation: world.simulation), name: "lamp")
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let scanner = central.scanner(services: generic.services.map(\.uuid))
        let heard = try await world.run { try await scanner.listen(for: .seconds(2)) }
        #expect(heard.map(\.address) == [lock.identifier.uuidString])
        let advertisement = try #require(heard.first?.advertisement)
        #expect(advertisement.name == "lock")
        #expect(advertisement.rssi == -48)
        #expect(advertisement.manufacturerData == [0x0059: Data([0x01, 0x02])])
        #expect(advertisement.serviceUUIDs == generic.services.map(\.uuid))
    }

    @Test func aScanStoppedByBluetoothOffStartsAgainWhenItIsBack() async throws {
        let world = StandInWorld(seed: 9)
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let scanner = central.scanner(services: nil)
        let late = SimulatedDevice(profile: .nrf52840, model: FramedDeviceModel(), simulation: world.simulation)
        let heard = try await world.run {
            async let devices = scanner.listen(for: .seconds(6))
            try await world.clock.sleep(for: .seconds(1))
            world.powerOff()
            // A device that turns up while Bluetooth is off is heard only if the scan restarts.
            try await world.clock.sleep(for: .seconds(1))
            let handle = world.addPeripheral(late, name: "late")
            try await world.clock.sleep(for: .seconds(1))
            world.powerOn()
            return (try await devices, handle.identifier)
        }
        #expect(heard.0.map(\.address) == [heard.1.uuidString])
    }

    @Test func theSameSeedGivesTheSameRun() async throws {
        func run() async throws -> (Duration, Int) {
            let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: FramedDeviceModel(), seed: 11)
            var faults = LinkFaults()
            faults.disconnectAtBytes = [70_000]
            harness.device.faults = faults
            let outcome = try await harness.update(try CoreBluetoothHarness.image(size: 150_000), using: FramedClient())
            return (outcome.virtualTime, try outcome.result.get().bytesSent)
        }
        let first = try await run()
        let second = try await run()
        #expect(first == second)
    }
}
#endif
