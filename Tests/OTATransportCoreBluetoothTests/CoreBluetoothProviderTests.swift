// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolFramed
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

/// The provider seam: addresses, resolution and a whole update through a session.
@Suite struct CoreBluetoothProviderTests {
    @Test func addressesAreCoreBluetoothIdentifiers() throws {
        let world = StandInWorld(seed: 1)
        let provider = CoreBluetoothTransportProvider(central: world.withCurrent { CoreBluetoothCentral(clock: world.clock) })
        #expect(provider.recognises("cb:00000000-0000-4000-8000-000000000001"))
        #expect(provider.recognises("00000000-0000-4000-8000-000000000001"))
        #expect(!provider.recognises("AA:BB:CC:DD:EE:FF"))
        #expect(!provider.recognises("sim:bolt-lock"))
        #expect(throws: OTAError.self) { try provider.device(at: "cb:nope", options: TransportOptions()) }
    }

    @Test func anUpdateRunsThroughASession() async throws {
        let world = StandInWorld(seed: 1)
        let model = FramedDeviceModel()
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: model, simulation: world.simulation)
        let handle = world.addPeripheral(device)
        let provider = CoreBluetoothTransportProvider(central: world.withCurrent { CoreBluetoothCentral(clock: world.clock) })
        let image = try CoreBluetoothHarness.image(size: 30_000)
        let address = "cb:\(handle.identifier.uuidString)"
        let report = try await world.run {
            let target = try provider.device(at: address, options: TransportOptions())
            #expect(target.address == address)
            let advertisement = try await target.advertisement(chosenProtocol: nil)
            #expect(advertisement?.serviceUUIDs == model.services.map(\.uuid))
            return try await target.withSession(SessionRequest(protocolName: "framed", imageSize: image.count)) { session throws(OTAError) in
                try await session.run { () async throws(OTAError) in
                    try await UpdateEngine(clock: session.clock).update(image, using: FramedClient(), connector: session.connector)
                }
            }
        }
        #expect(report.bytesSent == image.count)
        #expect(device.flash.read(0..<image.count) == (try image.allBytes()))
    }
}
#endif
