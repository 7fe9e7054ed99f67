import Foundation
import OTACore
import OTAProtocolFramed
import OTATestSupport
import OTATransportSimulator
import Testing

@Suite struct FramedEndToEndTests {
    static let client = FramedClient()

    static let sizeCases: [(FramedDeviceKind, DeviceProfile, Int)] = FramedDeviceKind.allCases.flatMap { kind in
        [(DeviceProfile.esp32MTU23, [1, 11, 12, 13, 20, 23, 24, 50_000]), (.esp32S3MTU244TwoM, [1, 235, 236, 237, 246, 247, 248, 200_000, 1_000_000])]
            .flatMap { profile, sizes in sizes.map { (kind, profile, $0) } }
    }

    @Test(arguments: sizeCases)
    func imageArrivesByteIdentical(kind: FramedDeviceKind, profile: DeviceProfile, size: Int) async throws {
        let harness = kind.harness(profile)
        let image = try UpdateHarness.image(size: size)
        let outcome = try await harness.update(image, using: Self.client)
        let report = try outcome.result.get()
        #expect(harness.flashContents(size) == image.bytes)
        #expect(report.bytesSent == size)
        #expect(report.chunkSize == profile.link.deviceMaximumMTU - 3 - FramedChunk.compactHeaderLength)
        #expect(outcome.states == [.connecting, .negotiating, .transferring, .verifying, .completed])
    }

    /// A version-1 device refuses BEGIN for version 2 (status 06); the client asks again in
    /// version 1 and the update completes. A client told to speak version 1 does so with any device.
    @Test(arguments: FramedDeviceKind.allCases)
    func versionOneIsNegotiatedWithVersionOneDevicesOrOnRequest(kind: FramedDeviceKind) async throws {
        let image = try UpdateHarness.image(size: 50_000)
        let harness = kind.harness(.esp32MTU23)
        let outcome = try await harness.update(image, using: Self.client)
        _ = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        let fellBack = outcome.notes.contains { $0 == "device refused framed protocol version 2 (status 0x06, invalid parameter); using version 1" }
        #expect(fellBack == (kind == .swiftVersion1))
        // Version 1 carries 12 payload bytes per 20-byte write, version 2 18 (14 in a batch's last).
        let writes = harness.device.dataWritesArrived
        if kind == .swiftVersion1 {
            #expect(writes >= 50_000 / 12)
        } else {
            #expect(writes < 50_000 / 12 && writes >= 50_000 / 18)
        }

        var configuration = FramedConfiguration()
        configuration.version = 1
        let v1Harness = kind.harness(.esp32MTU23)
        let v1 = try await v1Harness.update(image, using: FramedClient(configuration: configuration))
        _ = try v1.result.get()
        #expect(v1Harness.flashContents(image.count) == image.bytes)
        #expect(!v1.notes.contains { $0.contains("refused framed protocol version") })
    }

    /// COMMIT goes right behind the last chunk. When that chunk is lost, the device answers
    /// "incomplete" (no NAK: nothing came after the gap); the ACK timeout resends from the last
    /// ACK, and COMMIT goes again after the last ACK.
    @Test(arguments: FramedDeviceKind.allCases)
    func aLostLastChunkIsResentAndCommittedAgain(kind: FramedDeviceKind) async throws {
        let image = try UpdateHarness.image(size: 10_000)
        let clean = kind.harness()
        let cleanRun = try await clean.update(image, using: Self.client)
        _ = try cleanRun.result.get()
        #expect(!cleanRun.notes.contains { $0.hasPrefix("COMMIT found the image incomplete") })
        let lastWrite = clean.device.dataWritesArrived - 1
        let harness = kind.harness()
        var faults = LinkFaults()
        faults.dropWrites = [lastWrite]
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: Self.client)
        _ = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(outcome.notes.contains("COMMIT found the image incomplete; committing again after the last ACK"))
        #expect(outcome.notes.contains { $0.hasPrefix("no acknowledgement for") })
        #expect(outcome.states == [.connecting, .negotiating, .transferring, .verifying, .completed])
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func corruptDuplicateReorderedAndMissingChunksAreRecovered(kind: FramedDeviceKind) async throws {
        let harness = kind.harness()
        var faults = LinkFaults()
        faults.corruptWrites = [10, 300]
        faults.dropWrites = [50, 51, 600]
        faults.duplicateWrites = [100, 700]
        faults.reorderWrites = [200, 800]
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 200_000)
        let outcome = try await harness.update(image, using: Self.client)
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(report.resumes == 0)
        #expect(outcome.notes.contains { $0.contains("chunk CRC mismatch") })
        #expect(outcome.notes.contains { $0.contains("(gap)") })
        // Each fault costs at most one window of resent bytes.
        #expect(report.bytesSent - image.count <= 8 * 3 * 16 * 236)
    }

    /// A link that corrupts every chunk from some point on: each resend is refused again. The
    /// update fails with one error naming where it stood (a version-2 device NAKs every bad
    /// batch, which looped forever before; a version-1 device NAKs once and then stays silent
    /// until the resend it asked for, so the silences stall it), and once the link is clean the
    /// same image continues from there and completes byte-identical.
    @Test(arguments: FramedDeviceKind.allCases)
    func aLinkThatCorruptsEveryResendFailsTheUpdateAndItContinuesOnceClean(kind: FramedDeviceKind) async throws {
        let harness = kind.harness()
        var faults = LinkFaults()
        faults.corruptWrites = Set(100..<1_000_000)
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 200_000)
        let outcome = try await harness.update(image, using: Self.client)
        guard case .failure(let error) = outcome.result else {
            Issue.record("an update whose every resend is corrupted succeeded")
            return
        }
        if kind == .swiftVersion1 {
            #expect(error.code == .stalled)
        } else {
            #expect(error.code == .deviceRejected)
            #expect(error.message.contains(" 33 times in a row (last: chunk CRC mismatch)"))
            #expect(error.message.contains("run the update again (it resumes)"))
        }
        harness.device.faults = LinkFaults()
        let again = try await harness.update(image, using: Self.client)
        let report = try again.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(again.notes.contains { $0.hasPrefix("continuing at byte ") })
        #expect(report.bytesSent < image.count)
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func disconnectMidTransferResumesWhereTheDeviceStands(kind: FramedDeviceKind) async throws {
        let harness = kind.harness()
        var faults = LinkFaults()
        faults.disconnectAtBytes = [60_000, 140_000]
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 200_000)
        let outcome = try await harness.update(image, using: Self.client)
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(report.resumes == 2)
        #expect(report.bytesSent - image.count <= 2 * 3 * 16 * 236)
        #expect(outcome.states.filter { $0 == .paused }.count == 2)
        #expect(outcome.notes.contains { $0.hasPrefix("resuming: device holds") })
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func rebootMidTransferResumesFromTheJournal(kind: FramedDeviceKind) async throws {
        let harness = kind.harness(.nrf52840)
        var faults = LinkFaults()
        faults.rebootAtBytes = [50_001, 123_457]
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 200_000)
        let outcome = try await harness.update(image, using: Self.client)
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(harness.device.rebootCount == 2)  // the reboot into the new image comes after the run
        #expect(report.bytesSent - image.count <= 2 * 3 * 16 * 236)
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func aNewRunAfterACrashResumesWithNoHostState(kind: FramedDeviceKind) async throws {
        var harness = kind.harness()
        harness.configuration.resume = .disabled
        var faults = LinkFaults()
        faults.disconnectAtBytes = [150_000]
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 200_000)
        let first = try await harness.update(image, using: Self.client)
        #expect(try first.failure().code == .disconnected)
        // A fresh engine and client: only the device knows where things stand.
        let second = try await harness.update(image, using: FramedClient())
        let report = try second.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(report.bytesSent < 60_000)
        #expect(second.notes.contains { $0.hasPrefix("continuing at byte") })
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func aDifferentImageRestartsInsteadOfSplicing(kind: FramedDeviceKind) async throws {
        var harness = kind.harness()
        harness.configuration.resume = .disabled
        var faults = LinkFaults()
        faults.disconnectAtBytes = [100_000]
        harness.device.faults = faults
        let first = try UpdateHarness.image(size: 200_000, seed: 1)
        _ = try await harness.update(first, using: Self.client)
        let second = try UpdateHarness.image(size: 200_000, seed: 2)
        let outcome = try await harness.update(second, using: Self.client)
        let report = try outcome.result.get()
        #expect(harness.flashContents(second.count) == second.bytes)
        #expect(report.bytesSent >= second.count)
        #expect(outcome.notes.contains { $0.contains("of another image") })
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func anInstalledImageIsNotSentAgain(kind: FramedDeviceKind) async throws {
        let harness = kind.harness()
        let image = try UpdateHarness.image(size: 30_000)
        _ = try await harness.update(image, using: Self.client).result.get()
        let again = try await harness.update(image, using: Self.client)
        let report = try again.result.get()
        #expect(report.bytesSent == 0)
        #expect(again.notes.contains { $0.contains("already runs this image") })
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func flashFailureIsReportedWithItsMessage(kind: FramedDeviceKind) async throws {
        let harness = kind.harness()
        let device = harness.device
        harness.simulation.schedule(at: .seconds(1)) { device.flash.injectFailure("program failed") }
        let outcome = try await harness.update(try UpdateHarness.image(size: 200_000), using: Self.client)
        let error = try outcome.failure()
        #expect(error.code == .deviceRejected)
        #expect(error.message.hasPrefix("device reported a flash write failure at byte"))
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func aDeviceThatStallsWithoutDisconnectingIsReconnected(kind: FramedDeviceKind) async throws {
        var harness = kind.harness()
        harness.configuration.stallTimeout = .seconds(2)
        var faults = LinkFaults()
        faults.stallAtBytes = 80_000
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 200_000)
        let outcome = try await harness.update(image, using: Self.client)
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(report.resumes >= 1)
        #expect(
            outcome.events.contains { event in
                if case .state(.paused, let detail?, _) = event { return detail.contains("no data accepted") || detail.contains("no acknowledgement") }
                return false
            })
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func tooLargeImageIsRefusedAtBegin(kind: FramedDeviceKind) async throws {
        let harness = kind.harness(.nrf52840)
        let outcome = try await harness.update(try UpdateHarness.image(size: 1 << 20), using: Self.client)
        let error = try outcome.failure()
        #expect(error.code == .imageTooLarge)
        #expect(error.message.hasPrefix("device rejected BEGIN: status 0x04"))
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func givesUpWhenReconnectingBringsNoProgress(kind: FramedDeviceKind) async throws {
        var harness = kind.harness()
        harness.configuration.resume.maximumAttempts = 3
        var faults = LinkFaults()
        faults.disconnectAtBytes = [50_000]
        harness.device.faults = faults
        let device = harness.device
        harness.simulation.schedule(at: .seconds(1)) { device.isReachable = false }
        harness.configuration.connectTimeout = .seconds(5)
        let outcome = try await harness.update(try UpdateHarness.image(size: 200_000), using: Self.client)
        let error = try outcome.failure()
        #expect(error.message.hasPrefix("gave up after 3 reconnection attempts without progress"))
        #expect(outcome.states.filter { $0 == .paused }.count == 3)
    }

    @Test(arguments: FramedDeviceKind.allCases)
    func abortDiscardsTheSession(kind: FramedDeviceKind) async throws {
        var harness = kind.harness()
        harness.configuration.resume = .disabled
        var faults = LinkFaults()
        faults.disconnectAtBytes = [100_000]
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 200_000)
        _ = try await harness.update(image, using: Self.client)
        let engine = UpdateEngine(clock: harness.simulation.clock)
        let device = harness.device
        _ = try await harness.simulation.run {
            try await engine.abort(using: Self.client, connector: SimulatedConnector(device: device))
        }
        let outcome = try await harness.update(image, using: Self.client)
        let report = try outcome.result.get()
        #expect(report.bytesSent >= image.count)
        #expect(harness.flashContents(image.count) == image.bytes)
    }
}
