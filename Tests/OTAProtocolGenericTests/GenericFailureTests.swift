import Foundation
import OTACore
import OTATransportSimulator
import Testing

@testable import OTAProtocolGeneric

/// A transport that writes without waiting for room, like a client that ignores
/// `canSendWriteWithoutResponse`: the seed's back-pressure bug.
private final class NaiveTransport: Transport {
    let connection: SimulatedConnection
    init(_ connection: SimulatedConnection) { self.connection = connection }
    var link: LinkParameters { connection.link }
    var characteristics: [CharacteristicID: CharacteristicProperties] { connection.characteristics }
    var disconnections: AsyncStream<DisconnectReason> { connection.disconnections }
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        if kind == .withoutResponse {
            try connection.writeIgnoringFlowControl(value, to: characteristic)
        } else {
            try await connection.write(value, to: characteristic, kind: kind)
        }
    }
    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data { try await connection.read(characteristic) }
    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        try await connection.notifications(from: characteristic)
    }
    func disconnect() async { await connection.disconnect() }
}

private struct NaiveConnector: Connector {
    let inner: SimulatedConnector
    var deviceDescription: String { inner.deviceDescription }
    func connect() async throws(TransportError) -> any Transport {
        NaiveTransport(try await inner.connectSimulated())
    }
}

@Suite struct GenericFailureTests {
    private func failure(_ outcome: GenericHarness.Outcome) throws -> OTAError {
        try outcome.failure()
    }

    private func finalState(_ outcome: GenericHarness.Outcome) -> UpdateState? {
        outcome.states.last
    }

    @Test func naiveWriterLosesBytesAndTheDeviceReportsSizeMismatch() async throws {
        let harness = GenericHarness(profile: .esp32S3MTU244TwoM)
        let image = try GenericHarness.image(size: 200_000)
        let outcome = try await harness.update(image, connector: NaiveConnector(inner: SimulatedConnector(device: harness.device)))
        let error = try failure(outcome)
        // Every run loses bytes the same way: each size mismatch restarts, until the policy ends it.
        #expect(error.code == .transport)
        #expect(error.message.hasPrefix("gave up after 5 restarts from byte 0: device answered COMMIT with status 0x02, size mismatch"))
        #expect(harness.model.bytesReceived < image.count)
        #expect(finalState(outcome) == .failed)
    }

    @Test func rejectedStartIsAClearError() async throws {
        var behavior = GenericDeviceModel.Behavior()
        behavior.startStatus = .flashError
        let harness = GenericHarness(profile: .esp32MTU23, behavior: behavior)
        let error = try failure(try await harness.update(try GenericHarness.image(size: 1000)))
        #expect(error.code == .deviceRejected)
        #expect(error.message.hasPrefix("device rejected START: status 0xFF, flash error"))
    }

    @Test func imageLargerThanTheSlotIsRejectedAtStart() async throws {
        let harness = GenericHarness(profile: .nrf52840)
        let error = try failure(try await harness.update(try GenericHarness.image(size: (1 << 20) + 1)))
        #expect(error.message.hasPrefix("device rejected START: status 0xFF"))
    }

    @Test func corruptedChunkIsCaughtAsCRCMismatch() async throws {
        let harness = GenericHarness(profile: .esp32S3MTU244TwoM)
        var faults = LinkFaults()
        faults.corruptWrites = [100]
        harness.device.faults = faults
        let error = try failure(try await harness.update(try GenericHarness.image(size: 200_000)))
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("status 0x01, CRC mismatch"))
        #expect(harness.model.installedImage == nil)
    }

    @Test func droppedChunkIsCaughtAsSizeMismatch() async throws {
        let harness = GenericHarness(profile: .esp32MTU23)
        var faults = LinkFaults()
        faults.dropWrites = [7]
        harness.device.faults = faults
        // One lost write: COMMIT reports the size mismatch, the engine starts over and completes.
        let image = try GenericHarness.image(size: 5000)
        let report = try await harness.update(image).result.get()
        #expect(report.restarts == 1)
        #expect(report.resumes == 0)
        #expect(harness.model.installedImage == .init(size: image.count, crc32: image.crc32))
        #expect(harness.base.flashContents(image.count) == image.bytes)
    }

    @Test func deviceThatNeverAnswersTimesOutInVirtualTime() async throws {
        var behavior = GenericDeviceModel.Behavior()
        behavior.replies = false
        var harness = GenericHarness(profile: .esp32MTU23, behavior: behavior)
        harness.configuration.responseTimeout = .seconds(600)
        let wall = ContinuousClock.now
        let outcome = try await harness.update(try GenericHarness.image(size: 1000))
        let error = try failure(outcome)
        #expect(error.code == .timeout)
        #expect(error.message.hasPrefix("timed out after 10 min 00 s waiting for the START reply"))
        // The line says what to do next: this protocol keeps nothing, so the person starts over.
        #expect(error.message.hasSuffix("; this protocol cannot resume: run the same command again to start over"))
        #expect(outcome.virtualTime >= .seconds(600) && outcome.virtualTime < .seconds(601))
        // Ten minutes of waiting that end long before ten minutes of wall time: virtual time.
        #expect(ContinuousClock.now - wall < .seconds(120))
    }

    @Test func flashFailureMidTransferIsReportedAtCommit() async throws {
        let harness = GenericHarness(profile: .esp32S3MTU244TwoM)
        harness.simulation.schedule(at: .seconds(1)) {
            harness.device.flash.injectFailure("program verify failed")
        }
        let error = try failure(try await harness.update(try GenericHarness.image(size: 200_000)))
        #expect(error.code == .deviceRejected)
        #expect(error.message == "device rejected COMMIT: status 0xFF, flash error")
    }

    @Test func aLostLinkRestartsFromByteZeroAndCompletes() async throws {
        let harness = GenericHarness(profile: .esp32S3MTU244TwoM)
        var faults = LinkFaults()
        faults.disconnectAtBytes = [120_000]
        harness.device.faults = faults
        let image = try GenericHarness.image(size: 200_000)
        let outcome = try await harness.update(image)
        let report = try outcome.result.get()
        #expect(report.restarts == 1)
        #expect(report.resumes == 0)
        #expect(report.bytesSent >= 120_000 + image.count)
        #expect(harness.model.installedImage == .init(size: image.count, crc32: image.crc32))
        #expect(harness.base.flashContents(image.count) == image.bytes)
        let paused = outcome.events.compactMap { event -> String? in
            if case .state(.paused, let detail?, _) = event { detail } else { nil }
        }
        #expect(paused.count == 1)
        #expect(paused.first?.contains("link lost at byte 1") == true)
        #expect(paused.first?.hasSuffix("; restarting from byte 0 in 500 ms (attempt 1 of 5)") == true)
        #expect(finalState(outcome) == .completed)
    }

    @Test func aSizeMismatchFromADyingLinkRestartsAndCompletes() async throws {
        // The data path dies; COMMIT is still answered (size mismatch) before the link drops.
        let harness = GenericHarness(profile: .esp32S3MTU244TwoM)
        var faults = LinkFaults()
        faults.dyingLinkAtBytes = 150_000
        harness.device.faults = faults
        let image = try GenericHarness.image(size: 200_000)
        let outcome = try await harness.update(image)
        let report = try outcome.result.get()
        #expect(report.restarts == 1)
        #expect(report.resumes == 0)
        #expect(harness.model.installedImage == .init(size: image.count, crc32: image.crc32))
        #expect(harness.base.flashContents(image.count) == image.bytes)
        #expect(
            outcome.events.contains { event in
                if case .state(.paused, let detail?, _) = event { detail.contains("size mismatch") && detail.contains("restarting from byte 0") } else { false }
            })
    }

    @Test func disconnectMidTransferFailsWithTheReasonWithoutAttempts() async throws {
        var harness = GenericHarness(profile: .esp32S3MTU244TwoM)
        harness.configuration.resume.maximumAttempts = 0
        var faults = LinkFaults()
        faults.disconnectAtBytes = [120_000]
        harness.device.faults = faults
        let outcome = try await harness.update(try GenericHarness.image(size: 200_000))
        let error = try failure(outcome)
        #expect(error.code == .disconnected)
        #expect(error.message.contains("link lost"))
        #expect(finalState(outcome) == .failed)
        // Starting again restarts cleanly: START resets the device.
        let again = try await harness.update(try GenericHarness.image(size: 200_000))
        _ = try again.result.get()
    }

    @Test func deviceWithoutTheServiceIsNamed() async throws {
        let simulation = Simulation()
        let model = GenericDeviceModel(profile: GenericGATTProfile(service: GATTUUID("FEED")!))
        let device = SimulatedDevice(profile: .esp32MTU23, model: model, simulation: simulation)
        let engine = UpdateEngine(clock: simulation.clock)
        let image = try GenericHarness.image(size: 100)
        let error = try await simulation.run { () -> OTAError? in
            do throws(OTAError) {
                _ = try await engine.update(image, using: GenericClient(), connector: SimulatedConnector(device: device))
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.code == .missingCharacteristic)
        #expect(error?.message.hasPrefix("OTA Data: device has no characteristic 4f544101") == true)
    }

    @Test func unreachableDeviceFailsAfterTheConnectTimeout() async throws {
        var harness = GenericHarness(profile: .esp32MTU23)
        harness.device.isReachable = false
        harness.configuration.connectTimeout = .seconds(12)
        let outcome = try await harness.update(try GenericHarness.image(size: 100))
        let error = try failure(outcome)
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains("within 12.0 s"))
        #expect(outcome.virtualTime == .seconds(12))
    }

    @Test func deviceThatStopsTakingDataIsReportedAsStalled() async throws {
        var profile = DeviceProfile.esp32S3MTU244TwoM
        profile.flash.sectorEraseTime = .seconds(3600)
        var harness = GenericHarness(profile: profile)
        harness.configuration.stallTimeout = .seconds(3)
        let outcome = try await harness.update(try GenericHarness.image(size: 200_000))
        let error = try failure(outcome)
        #expect(error.code == .stalled)
        #expect(error.message.contains("no data accepted by the link for 3.0 s"))
        #expect(outcome.virtualTime < .seconds(15))
    }

    @Test func cancellationPausesWithoutAborting() async throws {
        let harness = GenericHarness(profile: .esp32MTU23)
        let image = try GenericHarness.image(size: 100_000)
        let engine = UpdateEngine(clock: harness.simulation.clock)
        let connector = SimulatedConnector(device: harness.device)
        let (error, states) = try await harness.simulation.run {
            let (events, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
            let failure = try await withThrowingTaskGroup(of: OTAError?.self) { group in
                group.addTask {
                    do throws(OTAError) {
                        _ = try await engine.update(image, using: GenericClient(), connector: connector, events: sink)
                        return nil
                    } catch {
                        return error
                    }
                }
                try await harness.simulation.clock.sleep(for: .seconds(5))
                group.cancelAll()
                return try await group.next()!
            }
            var states: [UpdateState] = []
            for await case .state(let state, _, _) in events { states.append(state) }
            return (failure, states)
        }
        #expect(error?.code == .cancelled)
        #expect(states.last == .paused)
        #expect(harness.model.bytesReceived > 0)
        #expect(harness.model.installedImage == nil)
    }
}
