import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Synchronization
import Testing

@testable import OTAProtocolFramed

/// The handshake as a state machine, without a transport.
@Suite struct FramedSessionTests {
    private let image = try! UpdateHarness.image(size: 10_000)
    private var identity: SessionIdentity { SessionIdentity(size: 10_000, crc: image.crc32, version: 7) }

    private func beginReply(_ state: FramedSessionState, offset: UInt32, batch: UInt16 = 16, result: FramedResult = .ok) -> Data {
        FramedNotification.beginReply(result, state: state, offset: offset, batch: batch).encoded
    }

    private func session(knownStatus: FramedDeviceStatus? = nil) -> FramedSession {
        FramedSession(image: image, identity: identity, batch: 16, knownStatus: knownStatus)
    }

    @Test func aFreshSessionReadsStatusWithBeginThenTransfersAndCommits() throws {
        var session = session()
        guard case .begin(let command, readingStatus: true) = session.start() else { throw Failure("expected BEGIN with a Status read") }
        #expect(command == .begin(identity, batch: 16))
        let idle = FramedDeviceStatus(state: .idle, offset: 0, runningCRC: 0, identity: SessionIdentity(size: 0, crc: 0, version: 0), maximumBatch: 16)
        guard case .awaitNotification("BEGIN reply", verdict: false) = session.statusRead(idle) else { throw Failure("expected to await BEGIN's reply") }
        // A late ACK from before BEGIN is skipped.
        guard case .awaitNotification("BEGIN reply", _) = session.receive(FramedNotification.ack(offset: 0, runningCRC: 0).encoded) else {
            throw Failure("expected the late ACK to be skipped")
        }
        guard case .position(at: 0) = session.receive(beginReply(.receiving, offset: 0, batch: 8)) else { throw Failure("expected position 0") }
        guard case .transfer(from: 0, batch: 8) = session.positioned() else { throw Failure("expected a transfer with the device's batch") }
        guard case .commit = session.transferFinished() else { throw Failure("expected COMMIT") }
        guard case .awaitNotification("COMMIT reply", verdict: true) = session.commitSent() else { throw Failure("expected to await the verdict") }
        guard case .finished = session.receive(FramedNotification.commitReply(.ok).encoded) else { throw Failure("expected to finish") }
        #expect(session.state == .done)
    }

    /// The resume point's Status is neither read again nor noted again: the engine has shown it
    /// ("resuming: device holds …").
    @Test func aKnownStatusIsNotReadAgainNorReportedTwice() throws {
        let status = FramedDeviceStatus(state: .receiving, offset: 4_096, runningCRC: 0, identity: identity, maximumBatch: 16)
        var session = session(knownStatus: status)
        guard case .begin(_, readingStatus: false) = session.start() else { throw Failure("expected BEGIN without a Status read") }
        guard case .awaitNotification("BEGIN reply", _) = session.beginSent() else { throw Failure("expected to await the BEGIN reply") }
        guard case .note(let continuing, then: .position(at: 4_096)) = session.receive(beginReply(.receiving, offset: 4_096)) else {
            throw Failure("expected to continue at the device's offset")
        }
        #expect(continuing == "continuing at byte 4096 of 10000")
    }

    @Test func aCompleteImageIsCommittedWithoutSendingAndAnInstalledOneFinishes() throws {
        var complete = session()
        _ = complete.start()
        _ = complete.beginSent()
        guard case .note(_, then: .position(at: 10_000)) = complete.receive(beginReply(.complete, offset: 10_000)) else { throw Failure("expected position") }
        guard case .commit = complete.positioned() else { throw Failure("expected COMMIT with nothing to send") }

        var installed = session()
        _ = installed.start()
        _ = installed.beginSent()
        guard case .note(let text, then: .finished) = installed.receive(beginReply(.installed, offset: 10_000)) else { throw Failure("expected to finish") }
        #expect(text.contains("already runs this image"))
    }

    @Test func refusalsAndMalformedRepliesFailWithTheirError() throws {
        func failure(_ reply: Data, committing: Bool = false) throws -> OTAError {
            var session = session()
            _ = session.start()
            _ = session.beginSent()
            if committing {
                _ = session.receive(beginReply(.receiving, offset: 0))
                _ = session.positioned()
                _ = session.transferFinished()
                _ = session.commitSent()
            }
            guard case .fail(let error) = session.receive(reply) else { throw Failure("expected a failure") }
            #expect(session.state == .failed)
            return error
        }
        #expect(try failure(beginReply(.idle, offset: 0, result: .tooLarge)).code == .imageTooLarge)
        #expect(try failure(beginReply(.idle, offset: 0, result: .badState)).message.hasPrefix("device rejected BEGIN: status 0x"))
        #expect(try failure(beginReply(.receiving, offset: 10_001)).code == .malformedResponse)
        #expect(try failure(beginReply(.receiving, offset: 0, batch: 0)).code == .malformedResponse)
        #expect(try failure(beginReply(.failed, offset: 0)).message == "device answered BEGIN in state failed")
        #expect(try failure(Data([0x77])).message.hasPrefix("malformed notification on framed Control while waiting for the BEGIN reply"))
        #expect(try failure(FramedNotification.commitReply(.crcMismatch).encoded, committing: true).code == .verificationFailed)
        #expect(try failure(FramedNotification.commitReply(.incomplete).encoded, committing: true).code == .verificationFailed)
        #expect(try failure(FramedNotification.commitReply(.flashError).encoded, committing: true).code == .deviceRejected)
    }

    @Test func inputsOutOfOrderFail() {
        var session = session()
        guard case .fail(let error) = session.positioned() else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .internal)
    }
}

private struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Counts reads of the Status characteristic of the framed device it wraps.
private final class StatusReadCounter: DeviceModel {
    let model = FramedDeviceModel()
    let reads = Mutex(0)

    var services: [GATTServiceDefinition] { model.services }
    func connected(_ peripheral: any PeripheralContext) { model.connected(peripheral) }
    func disconnected() { model.disconnected() }
    func rebooted() { model.rebooted() }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        model.write(value, to: characteristic, kind: kind, peripheral: peripheral)
    }

    func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        if characteristic == FramedGATTProfile().status { reads.withLock { $0 += 1 } }
        return model.read(characteristic, peripheral: peripheral)
    }
}

@Suite struct FramedResumeRoundTripTests {
    @Test func aFreshUpdateReadsStatusOnceAlongsideBegin() async throws {
        let counter = StatusReadCounter()
        let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: counter)
        let image = try UpdateHarness.image(size: 50_000)
        _ = try await harness.update(image, using: FramedClient()).result.get()
        #expect(counter.reads.withLock { $0 } == 1)
    }

    @Test func aResumeReadsStatusOnceAndContinuesFromIt() async throws {
        let counter = StatusReadCounter()
        let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: counter)
        var faults = LinkFaults()
        faults.disconnectAtBytes = [60_000]
        harness.device.faults = faults
        let image = try UpdateHarness.image(size: 200_000)
        let outcome = try await harness.update(image, using: FramedClient())
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(report.resumes == 1)
        // One read alongside the first BEGIN, one for the resume point; the resumed run uses that
        // one (it read Status a second time before).
        #expect(counter.reads.withLock { $0 } == 2)
        #expect(outcome.notes.contains { $0.hasPrefix("resuming: device holds") })
        // The resume point's Status was shown as "resuming: …"; it is not noted a second time.
        #expect(outcome.notes.filter { $0.hasPrefix("device status before BEGIN") }.isEmpty)
    }
}
