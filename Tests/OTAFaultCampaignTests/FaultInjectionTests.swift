import Foundation
import OTACore
import OTAProtocolGeneric
import OTATestSupport
import OTATransportSimulator
import Testing

/// The simulator faults the campaign added, and the campaign's own determinism.
@Suite struct FaultInjectionTests {
    /// Flash fails from the write that reaches the threshold on, across a reconnection: the
    /// generic device counts the bytes and answers COMMIT with `FF`.
    @Test func failingFlashFromAByteCountFailsEveryWriteFromThenOn() async throws {
        var harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: GenericDeviceModel())
        harness.configuration.resume.maximumAttempts = 2
        var faults = LinkFaults()
        faults.failFlashAtBytes = 5_000
        faults.disconnectAtBytes = [8_000]
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 12_000)
        let outcome = try await harness.update(image, using: GenericClient())
        let error = try outcome.failure()
        #expect(error.code == .deviceRejected)
        #expect(error.message.hasPrefix("device rejected COMMIT: status 0xFF, flash error"))
        #expect(harness.device.faults.failFlashAtBytes == nil)
        // Before the threshold the bytes went to flash; from the write that reached it on, none did.
        let written = harness.device.flash.bytesWritten
        #expect(written > 0 && written < 5_000)
        #expect(harness.flashContents(written) == image.bytes.prefix(written))
        #expect(throws: FlashError.self) { try harness.device.flash.write(Data([0]), at: 100_000) }
    }

    /// Indexed faults name data writes counted across connections, as `dataWritesArrived` does.
    @Test func dataWritesArrivedCountsEveryDataWriteAcrossConnections() async throws {
        let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: GenericDeviceModel())
        var faults = LinkFaults()
        faults.dropWrites = [3, 23]
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 4_880)  // 20 writes of 244 bytes
        let outcome = try await harness.update(image, using: GenericClient())
        let report = try outcome.result.get()
        // Write 3 is lost: COMMIT answers 02 and the update restarts; write 23 is the restart's
        // fourth, lost too; the third run's 20 writes arrive whole. Lost writes count.
        #expect(report.restarts == 2)
        #expect(harness.device.dataWritesArrived == 60)
        #expect(harness.flashContents(image.count) == image.bytes)
    }

    /// A run that outlasts the virtual-time bound is reported as a hang, not waited for.
    @Test func aRunPastTheVirtualTimeBoundIsAHang() async {
        let plan = FaultPlan.make(seed: 3, protocols: CampaignProtocol.all)
        let result = await CampaignRun.run(plan, verbose: false, bound: .milliseconds(100))
        #expect(result.outcome == .violation)
        #expect(result.violations.contains { $0.hasPrefix("still running after 100 ms of virtual time") })
    }

    /// The same seed draws the same plan and ends the same way, event for event.
    @Test func aSeedReplaysTheSameRun() async throws {
        for seed: UInt64 in [3, 22, 677] {
            let plan = FaultPlan.make(seed: seed, protocols: CampaignProtocol.all)
            #expect(FaultPlan.make(seed: seed, protocols: CampaignProtocol.all).description == plan.description)
            let first = await CampaignRun.run(plan, verbose: false)
            let second = await CampaignRun.run(plan, verbose: false)
            #expect(first.outcome == second.outcome)
            #expect(first.resent == second.resent)
            #expect(first.virtualTime == second.virtualTime)
            #expect(first.fired == second.fired)
        }
    }
}
