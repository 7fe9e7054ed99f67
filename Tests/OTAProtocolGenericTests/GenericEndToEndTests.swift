import Foundation
import OTACore
import OTAProtocolGeneric
import OTATransportSimulator
import Testing

@Suite struct GenericEndToEndTests {
    @Test func smoke() async throws {
        let harness = GenericHarness(profile: .esp32S3MTU244TwoM)
        let image = try GenericHarness.image(size: 200_000)
        let start = ContinuousClock.now
        let outcome = try await harness.update(image)
        let report = try outcome.result.get()
        print(report, outcome.virtualTime, ContinuousClock.now - start)
        #expect(harness.device.flash.read(0..<image.count) == image.bytes)
    }
}
