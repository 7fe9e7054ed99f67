import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATestSupport
import OTATransportSimulator
import Testing

/// Resume through the engine and the simulated bootloader: the Select(data) answer read for the
/// resume point is the run's checkpoint.
@Suite struct NordicDFUResumeTests {
    @Test(arguments: [144 + 10_000, 144 + 8192])
    func aResumeReusesTheCheckpointAndLeavesTheInitPacketAlone(bytes: Int) async throws {
        let model = NordicBootloaderModel()
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        let image = try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try UpdateHarness.image(size: 20_000, seed: 3))
        var faults = LinkFaults()
        faults.disconnectAtBytes = [bytes]
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: NordicDFUClient())
        let report = try outcome.result.get()
        #expect(report.resumes == 1)
        #expect(model.installedImage?.sha256 == SHA256.hash(image.bytes))
        let resumed = try #require(outcome.notes.firstIndex { $0.hasPrefix("resuming: bootloader holds") })
        let after = outcome.notes[resumed...]
        #expect(after.contains { $0.hasSuffix("bytes of this image under an executed init packet; continuing without sending it again") })
        #expect(!after.contains("the bootloader already holds this init packet"))
        #expect(!after.contains { $0.contains("sending the object again") })
    }
}
