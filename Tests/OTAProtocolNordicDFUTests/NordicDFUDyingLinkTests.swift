import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATestSupport
import OTATransportSimulator
import Testing

/// A link whose data path is gone while the Control Point still answers (bluetoothd keeps a
/// dying link ~2 s): checksum failures are paced on the clock until the link drops, and the
/// engine resumes from Select. Only a bootloader that keeps failing on a link that stays up is
/// reported as dropping packets.
@Suite struct NordicDFUDyingLinkTests {
    /// `prn` 0: every object ends in Calculate Checksum, answered with the short offset. `prn` 12
    /// (the default): after the object's last receipt (11120) the rest goes without one, and the
    /// checksum is answered short; before it (10000) the receipt never comes and the drop ends the
    /// wait.
    @Test(arguments: [(0, 10_000, true), (12, 11_500, true), (12, 10_000, false)])
    func aDisconnectMidObjectResumesAndCompletesByteIdentically(prn: Int, dyingAt: Int, checksumFails: Bool) async throws {
        let bootloader = RecordingBootloader()
        let harness = UpdateHarness(profile: .nrf52840, model: bootloader)
        let image = try NordicDFUResumeTests.image(firmwareVersion: 1)
        let initPacketCount = image.attachments[NordicDFUClient.initPacketKey]?.count ?? 0
        var faults = LinkFaults()
        faults.dyingLinkAtBytes = initPacketCount + dyingAt  // mid-object: the third object starts at 8192
        harness.device.faults = faults
        var settings = NordicDFUConfiguration()
        settings.packetReceiptInterval = prn
        let outcome = try await harness.update(image, using: NordicDFUClient(configuration: settings))
        let report = try outcome.result.get()
        #expect(report.resumes == 1)
        #expect(bootloader.model.installedImage?.sha256 == SHA256.hash(image.bytes))
        #expect(harness.flashContents(image.count) == image.bytes)
        // The resend was paced while the link died; the resume kept the bootloader's progress.
        #expect(outcome.notes.contains { $0.contains("with a different CRC") } == checksumFails)
        #expect(outcome.notes.contains { $0.hasPrefix("resuming: bootloader holds") })
        #expect(!outcome.notes.contains { $0.contains("drops packets") })
        // The pauses ran on the simulation's clock (the harness has no other).
        #expect(outcome.virtualTime > .seconds(2))
    }

    @Test func aBootloaderThatDropsPacketsOnAHealthyLinkFailsWithAdviceForTheSettings() async throws {
        let harness = UpdateHarness(profile: .nrf52840, model: NordicBootloaderModel())
        let image = try NordicDFUResumeTests.image(firmwareVersion: 1)
        var faults = LinkFaults()
        // One packet of every 17 is lost, on every attempt; the link stays up.
        faults.dropWrites = Set(stride(from: 5, to: 5000, by: 17))
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: NordicDFUClient())
        let error = try outcome.failure()
        #expect(error.code == .verificationFailed)
        #expect(error.message.hasPrefix("object at byte 0 failed its checksum 3 times on a link that stayed up"))
        #expect(
            error.message.hasSuffix(
                "the bootloader drops packets: prn=12 is already set; try --param prn=1 or a lower --max-chunk (packets are 244 bytes; such as 120)"))
        // Paced: 0.5 s and 1 s before the resends, 3 s before the verdict, in virtual time.
        #expect(outcome.virtualTime >= .milliseconds(4500))
        #expect(outcome.notes.contains { $0.hasSuffix("sending the object again in 500 ms (attempt 2)") })
        #expect(outcome.notes.contains { $0.hasSuffix("sending the object again in 1.0 s (attempt 3)") })
    }
}
