import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

/// The resume campaign: many seeded runs, each interrupted by disconnects and reboots at random
/// points. Every run must end with a byte-identical image in slot 1. A disconnect costs at most
/// one window of re-sent bytes (the device keeps its upload in RAM); a reboot loses the upload,
/// as Zephyr's does, so what the device held then is sent again.
@Suite struct MCUmgrResumeCampaignTests {
    static let runs = 200

    @Test func everyInterruptedRunCompletesByteIdentical() async throws {
        let profiles: [DeviceProfile] = [.esp32MTU185, .esp32S3MTU244OneM, .esp32S3MTU244TwoM, .nrf52840]
        var interruptions = 0
        for run in 0..<Self.runs {
            var random = SeededRandom(seed: UInt64(run) &* 0x9E37_79B9 &+ 29)
            let profile = profiles[Int(random.next() % UInt64(profiles.count))]
            // Sizes to 160 KB: the campaign is about where interruptions fall, and every run hashes its
            // image several times (writer, client, device), which a debug build does slowly.
            let size = 10_000 + Int(random.next() % 150_000)
            let window = [1, 2, 4, 8][Int(random.next() % 4)]
            let bufferSize = [512, 2475][Int(random.next() % 2)]
            let count = 1 + Int(random.next() % 3)
            var disconnects: [Int] = []
            var reboots: [Int] = []
            for _ in 0..<count {
                let point = 1 + Int(random.next() % UInt64(size))
                if random.next() % 3 == 0 { reboots.append(point) } else { disconnects.append(point) }
            }
            let body = try UpdateHarness.image(size: size, seed: UInt64(run)).bytes
            let image = try FirmwareImage(
                bytes: MCUbootImageWriter.unsigned(body: body, version: .init(major: 1, minor: 2, revision: UInt16(run))), name: "run-\(run)")
            let model = MCUmgrDeviceModel(settings: .init(bufferSize: bufferSize))
            var harness = UpdateHarness(profile: profile, model: model, seed: UInt64(run))
            harness.configuration.resume.maximumAttempts = 10
            var faults = LinkFaults()
            faults.disconnectAtBytes = disconnects.sorted()
            faults.rebootAtBytes = reboots.sorted()
            harness.device.faults = faults
            var configuration = MCUmgrConfiguration()
            configuration.mode = .upload
            configuration.window = window
            let outcome = try await harness.update(image, using: MCUmgrClient(configuration: configuration))
            let report = try #require(try? outcome.result.get(), "run \(run) failed: \(String(describing: try? outcome.failure()))")
            #expect(harness.flashContents(image.count) == image.bytes, "run \(run): image differs")
            #expect(model.imageState.slot(1) != nil, "run \(run): slot 1 lists no image")
            // Thresholds count data bytes delivered across connections, re-sent ones included, so
            // a reboot loses at most what had been delivered by then.
            let lostToReboots = reboots.filter { $0 <= report.bytesSent }.reduce(0, +)
            let windowBytes = window * bufferSize
            #expect(
                report.bytesSent - image.count <= report.resumes * windowBytes + lostToReboots,
                "run \(run): re-sent \(report.bytesSent - image.count) bytes over \(report.resumes) resumes (window \(windowBytes) bytes)")
            #expect(report.resumes <= count)
            interruptions += report.resumes
        }
        // Thresholds near the end of an image may never be reached; most are.
        #expect(interruptions > Self.runs)
    }
}
