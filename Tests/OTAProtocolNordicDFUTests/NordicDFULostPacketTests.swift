import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATestSupport
import OTATransportSimulator
import Testing

/// A packet lost on a link that stays up (found by the fault campaign, seed 22). The bootloader
/// counts packet receipts over the packets it received, so the receipt the client waits for
/// never comes. The client asks Calculate Checksum after ``NordicDFUStateMachine/receiptTimeout``
/// and sends the object again, on the same link; before, it waited out the response timeout
/// (10 s) and the engine reconnected.
@Suite struct NordicDFULostPacketTests {
    /// `lost`: the data write lost (the init packet is write 0): inside the first run of 12
    /// packets, its last one, and one in the object's last run (no receipt: its checksum tells).
    @Test(arguments: [5, 12, 15])
    func aLostPacketCostsTheObjectNotTheLink(lost: Int) async throws {
        let harness = UpdateHarness(profile: .nrf52840, seed: 1) { simulation in NordicBootloaderModel(clock: { simulation.now }) }
        let image = try NordicDFUResumeTests.image(firmwareVersion: 1)
        var faults = LinkFaults()
        faults.dropWrites = [lost]
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: NordicDFUClient())
        let report = try outcome.result.get()
        #expect(report.resumes == 0)
        #expect(!outcome.states.contains(.paused))
        #expect(outcome.notes.filter { $0.contains("sending the object again") }.count == 1)
        #expect(report.bytesSent - image.count <= 4096)
        #expect(harness.flashContents(image.count) == image.bytes)
        // At most the receipt timeout and a resend pause: not the 10 s response timeout.
        #expect(outcome.virtualTime < .seconds(8))
    }

    /// A damaged write of the init packet (found by the fault campaign, seeds 166 and 929): its
    /// checksum differs, and the init packet is sent again, as an object would be (Nordic's
    /// clients do the same), instead of failing the update. `damage` 0 loses the write, 1
    /// corrupts it. (A doubled one is harmless: the bootloader refuses bytes past the size Create
    /// announced.)
    @Test(arguments: [0, 1])
    func aDamagedInitPacketWriteSendsTheInitPacketAgain(damage: Int) async throws {
        let harness = UpdateHarness(profile: .nrf52840, seed: 1) { simulation in NordicBootloaderModel(clock: { simulation.now }) }
        let image = try NordicDFUResumeTests.image(firmwareVersion: 1)
        var faults = LinkFaults()
        if damage == 0 { faults.dropWrites = [0] } else { faults.corruptWrites = [0] }
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: NordicDFUClient())
        let report = try outcome.result.get()
        #expect(report.resumes == 0)
        #expect(
            outcome.notes.contains { $0.hasPrefix("the bootloader received the init packet wrong") && $0.hasSuffix("sending it again in 500 ms (attempt 2)") })
        #expect(harness.flashContents(image.count) == image.bytes)
    }

    /// An init packet damaged on every attempt, on a link that stays up, fails the update.
    @Test func anInitPacketDamagedOnEveryAttemptFails() async throws {
        let harness = UpdateHarness(profile: .nrf52840, seed: 1) { simulation in NordicBootloaderModel(clock: { simulation.now }) }
        let image = try NordicDFUResumeTests.image(firmwareVersion: 1)
        var faults = LinkFaults()
        faults.corruptWrites = [0, 1, 2]
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: NordicDFUClient())
        let error = try outcome.failure()
        #expect(error.code == .verificationFailed)
        #expect(error.message.hasPrefix("the bootloader received the init packet wrong 3 times on a link that stayed up"))
        #expect(!outcome.states.contains(.paused))
    }
}
