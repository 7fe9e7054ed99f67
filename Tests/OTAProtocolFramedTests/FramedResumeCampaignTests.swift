import Foundation
import OTACore
import OTAProtocolFramed
import OTATestSupport
import OTATransportSimulator
import Testing

/// The resume campaign: many seeded runs, each interrupted by disconnects and reboots at random
/// points. Every run must end with a byte-identical image and re-send at most one window per
/// interruption.
@Suite struct FramedResumeCampaignTests {
    static let runs = 200

    @Test(arguments: FramedDeviceKind.allCases)
    func everyInterruptedRunCompletesByteIdentical(kind: FramedDeviceKind) async throws {
        let profiles: [DeviceProfile] = [.esp32MTU185, .esp32S3MTU244OneM, .esp32S3MTU244TwoM, .nrf52840]
        var interruptions = 0
        for run in 0..<Self.runs {
            var random = SeededRandom(seed: UInt64(run) &* 0x9E37_79B9 &+ 17)
            let profile = profiles[Int(random.next() % UInt64(profiles.count))]
            let size = 20_000 + Int(random.next() % 280_000)
            let count = 1 + Int(random.next() % 3)
            var disconnects: [Int] = []
            var reboots: [Int] = []
            for _ in 0..<count {
                let point = 1 + Int(random.next() % UInt64(size))
                if random.next() % 2 == 0 { disconnects.append(point) } else { reboots.append(point) }
            }
            var harness = kind.harness(profile, seed: UInt64(run))
            harness.configuration.resume.maximumAttempts = 10
            var faults = LinkFaults()
            faults.disconnectAtBytes = disconnects.sorted()
            faults.rebootAtBytes = reboots.sorted()
            harness.device.faults = faults
            let image = try UpdateHarness.image(size: size, seed: UInt64(run))
            let outcome = try await harness.update(image, using: FramedClient())
            let report = try #require(try? outcome.result.get(), "run \(run) failed: \(String(describing: try? outcome.failure()))")
            #expect(harness.flashContents(size) == image.bytes, "run \(run): image differs")
            let window = 3 * 16 * report.chunkSize
            #expect(report.bytesSent - size <= report.resumes * window, "run \(run): re-sent \(report.bytesSent - size) bytes over \(report.resumes) resumes")
            #expect(report.resumes <= count)
            interruptions += report.resumes
        }
        // Thresholds near the end of an image may never be reached; most are.
        #expect(interruptions > Self.runs)
    }
}
