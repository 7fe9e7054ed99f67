// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolMCUmgr
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

/// MCUmgr's end-to-end updates through the CoreBluetooth transport and the stand-in: SMP frames
/// split across writes without response, notifications reassembled, and MCUboot's reset and
/// reconnect in test mode.
@Suite struct CoreBluetoothMCUmgrTests {
    static func client(_ mode: MCUmgrUpdateMode) -> MCUmgrClient {
        var configuration = MCUmgrConfiguration()
        configuration.mode = mode
        return MCUmgrClient(configuration: configuration)
    }

    static func image(total: Int) throws -> FirmwareImage {
        let overhead = MCUbootImageWriter.unsigned(body: Data([0]), version: .init(major: 1, minor: 0, revision: 0)).count - 1
        let body = Data((0..<(total - overhead)).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 5) })
        return try FirmwareImage(bytes: MCUbootImageWriter.unsigned(body: body, version: .init(major: 2, minor: 0, revision: 0)), name: "\(total).bin")
    }

    @Test(arguments: [DeviceProfile.esp32MTU23, .esp32S3MTU244TwoM], [400, 2475, 2476, 100_000])
    func uploadsArriveByteIdentical(profile: DeviceProfile, total: Int) async throws {
        let image = try Self.image(total: total)
        let model = MCUmgrDeviceModel()
        let harness = CoreBluetoothHarness(profile: profile, model: model)
        let outcome = try await harness.update(image, using: Self.client(.upload))
        _ = try outcome.result.get()
        #expect(harness.flashContents(total) == (try image.allBytes()))
        #expect(model.imageState.slot(1)?.hash == (try MCUbootImage(parsing: (try image.allBytes())).hash))
        #expect(harness.peripheral.writesDropped == 0)
    }

    @Test func testModeResetsReconnectsAndConfirms() async throws {
        let image = try Self.image(total: 60_000)
        let model = MCUmgrDeviceModel()
        let harness = CoreBluetoothHarness(profile: .nrf52840, model: model)
        let outcome = try await harness.update(image, using: Self.client(.test))
        _ = try outcome.result.get()
        #expect(model.primaryImage == (try image.allBytes()))
        #expect(model.imageState.slot(0)?.confirmed == true)
        #expect(harness.peripheral.writesDropped == 0)
    }
}
#endif
