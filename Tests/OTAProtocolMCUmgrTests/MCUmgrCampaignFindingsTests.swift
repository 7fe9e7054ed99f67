import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

/// The bugs the cross-protocol fault campaign found in the MCUmgr client and device model
/// (docs/fault-campaign.md, "What it found"), each on its own.
@Suite struct MCUmgrCampaignFindingsTests {
    static func image(_ size: Int, seed: UInt64) throws -> FirmwareImage {
        let body = try UpdateHarness.image(size: size, seed: seed).bytes
        return try FirmwareImage(bytes: MCUbootImageWriter.unsigned(body: body, version: .init(major: 2, minor: 0, revision: 0)), name: "finding")
    }

    static var upload: MCUmgrClient {
        var configuration = MCUmgrConfiguration()
        configuration.mode = .upload
        return MCUmgrClient(configuration: configuration)
    }

    /// Seed 515: a link that stopped taking writes during the first upload request hung the
    /// update for good. The request's writes went without the stall watchdog (only the wait for
    /// its answer, behind the slot erase, should), and a write the link never takes never
    /// returns. Now the watchdog fails it as a stall and the engine resumes.
    @Test(.timeLimit(.minutes(1))) func aLinkThatStallsDuringTheFirstRequestIsResumed() async throws {
        let image = try Self.image(18_177, seed: 515)
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: .nrf52840, model: model, seed: 515)
        var faults = LinkFaults()
        faults.stallAtBytes = 256
        harness.device.faults = faults
        // At MTU 131 the first request's 20 writes are more than the link queues.
        let outcome = try await harness.update(image, using: Self.upload, connector: SimulatedConnector(device: harness.device, centralMTU: 131))
        let report = try outcome.result.get()
        #expect(report.resumes == 1)
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(outcome.events.contains { if case .state(.paused, let detail, _) = $0 { detail?.contains("stopped taking data") == true } else { false } })
    }

    /// Seeds 267, 653, 672, 746: a request that reached the device twice (its one write
    /// doubled) was answered twice, and the second answer, to a request already answered, failed
    /// the update as `answers no request in flight`. Now it is skipped with a note; an answer
    /// to a sequence number never sent still fails.
    @Test func aSecondAnswerToAnAnsweredRequestIsSkipped() async throws {
        let image = try Self.image(7_429, seed: 267)
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: .nrf52840, model: model, seed: 267)
        var faults = LinkFaults()
        faults.duplicateWrites = [0]  // the image state request
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: Self.upload)
        _ = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(outcome.notes.contains { $0.hasPrefix("skipped a second answer to SMP request 0") })
    }

    /// The same for an upload request's answer, inside the pipelined window.
    @Test func aSecondAnswerToAnUploadRequestIsSkipped() async throws {
        let image = try Self.image(30_000, seed: 7)
        // Buffers of 200 bytes put every request in one 244-byte write, so the doubled write is
        // a whole request and reaches the device twice.
        let harness = UpdateHarness(profile: .nrf52840, model: MCUmgrDeviceModel(settings: .init(bufferSize: 200)), seed: 7)
        var faults = LinkFaults()
        faults.duplicateWrites = [6]  // an upload request past the first
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: Self.upload)
        _ = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(outcome.notes.contains { $0.hasPrefix("skipped a second answer to SMP request") })
    }

    /// Seeds 6399 (from a 12,000-seed run): after a reboot the resume probe reached the device
    /// twice; its second answer was still on its way when the run opened its own channel, whose
    /// sequence numbers started again at 0 and which knew nothing of the probe, so the answer
    /// failed the update as `answers no request in flight`. The client's channels now share
    /// one sequence (and the memory of what was answered) across connections and calls.
    @Test func aSecondAnswerToTheResumeProbeIsSkipped() async throws {
        let image = try Self.image(16_383, seed: 6399)
        let harness = UpdateHarness(profile: .nrf52840, model: MCUmgrDeviceModel(), seed: 6399)
        var faults = LinkFaults()
        faults.rebootAtBytes = [15_360]
        faults.duplicateWrites = [67]  // the resume probe, one write
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: Self.upload)
        let report = try outcome.result.get()
        #expect(report.resumes == 1)
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(outcome.notes.contains { $0.hasPrefix("skipped a second answer to SMP request") })
    }

    /// Seed 1229: the model kept a finished upload as resumable, so a device whose last answer
    /// (`match: false`) was lost with the link answered the resume with "all bytes held", and
    /// the update failed as `the image did not land`. Zephyr's `img_mgmt` resets its upload
    /// state when the last byte arrives: a request at offset 0 then starts over, unless slot 1
    /// holds that very file.
    @Test func aFinishedUploadIsNotResumed() throws {
        var device = DeviceUnderTest()
        let image = try Self.image(3_000, seed: 9)
        let sha = Data(SHA256.hash(image.bytes))
        func upload(_ request: ImageUploadRequest) throws -> ImageUploadResponse {
            try ImageUploadResponse(payload: device.send(.upload(request)).payload)
        }
        var corrupted = image.bytes
        corrupted[2_000] ^= 0xFF
        // The whole file, one byte damaged on the way: the device says it does not match.
        _ = try upload(ImageUploadRequest(length: image.count, offset: 0, sha: sha, data: corrupted[0..<1_000]))
        _ = try upload(ImageUploadRequest(offset: 1_000, data: corrupted[1_000..<2_000]))
        let last = try upload(ImageUploadRequest(offset: 2_000, data: corrupted[2_000..<image.count]))
        #expect(last.offset == image.count && last.match == false)
        // The resume probe starts the file over rather than report it held.
        let probe = try upload(ImageUploadRequest(length: image.count, offset: 0, sha: sha, data: image.bytes[0..<4]))
        #expect(probe.offset == 4)
        // Sent whole and right, slot 1 holds it: a probe for it is answered with its length.
        _ = try upload(ImageUploadRequest(offset: 4, data: image.bytes[4..<1_500]))
        #expect(try upload(ImageUploadRequest(offset: 1_500, data: image.bytes[1_500..<image.count])).match == true)
        let again = try upload(ImageUploadRequest(length: image.count, offset: 0, sha: sha, data: image.bytes[0..<4]))
        #expect(again.offset == image.count)
    }
}
