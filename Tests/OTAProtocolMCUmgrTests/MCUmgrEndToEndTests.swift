import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

/// Whole updates of the MCUmgr device model in the simulator.
@Suite struct MCUmgrEndToEndTests {
    static func client(_ mode: MCUmgrUpdateMode, window: Int = 8) -> MCUmgrClient {
        var configuration = MCUmgrConfiguration()
        configuration.mode = mode
        configuration.window = window
        return MCUmgrClient(configuration: configuration)
    }

    static func fixture(_ name: String) throws -> FirmwareImage {
        try FirmwareImage(bytes: Fixture.data(name), name: name)
    }

    @Test func uploadLandsByteIdenticalInSlotOne() async throws {
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        let image = try Self.fixture("unsigned-200KB.bin")
        let outcome = try await harness.update(image, using: Self.client(.upload))
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        let state = model.imageState
        #expect(state.slot(1)?.hash == (try MCUbootImage(parsing: image.bytes)).hash)
        #expect(state.slot(1)?.pending == false)
        #expect(report.bytesSent == image.count)
        print(report.goodput, outcome.virtualTime, outcome.notes)
    }
}
