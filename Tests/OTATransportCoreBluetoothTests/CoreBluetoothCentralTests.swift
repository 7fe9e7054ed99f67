// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
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
#endif
