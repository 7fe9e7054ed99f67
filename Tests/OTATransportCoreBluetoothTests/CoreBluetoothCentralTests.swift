import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolGeneric
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

@Suite struct CoreBluetoothCentralTests {
    @Test func theCentralSeesBluetoothOn() async throws {
        let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: GenericDeviceModel())
        let central = harness.makeCentral()
        let on = try await harness.world.run {
            _ = await central.restoredPeripherals()
            return central.isPoweredOn
        }
        #expect(on == true)
    }
}
