import Foundation
import OTACore

/// The client side of the framed protocol: read Status, BEGIN, stream chunks in a window of
/// batches checked by ACKs, COMMIT. Resumable and abortable.
///
/// A thin driver: the handshake is a ``FramedSession``, the transfer a ``FramedTransferWindow``.
public struct FramedClient: ResumableUpdateProtocol, AbortableUpdateProtocol {
    /// Settings.
    public var configuration: FramedConfiguration

    /// Creates a client.
    public init(configuration: FramedConfiguration = FramedConfiguration()) {
        self.configuration = configuration
    }

    private var profile: FramedGATTProfile { configuration.profile }

    /// Each data write carries a ``FramedChunk`` header (2 bytes in version 2, 8 in version 1);
    /// written without response.
    public var dataWrites: DataWriteShape {
        DataWriteShape(headerLength: configuration.version >= FramedCommand.compactVersion ? FramedChunk.compactHeaderLength : FramedChunk.headerLength)
    }

    /// Data, Control and Status, with the properties the protocol uses.
    public var requirements: [CharacteristicRequirement] {
        [
            CharacteristicRequirement("Framed Data", profile.data, properties: .writeWithoutResponse),
            CharacteristicRequirement("Framed Control", profile.control, properties: [.write, .notify]),
            CharacteristicRequirement("Framed Status", profile.status, properties: .read),
        ]
    }

    /// The session identity of `image` under this configuration.
    public func identity(of image: FirmwareImage) throws(OTAError) -> SessionIdentity {
        guard let size = UInt32(exactly: image.count) else {
            throw OTAError(.imageTooLarge, "\(image.name) is \(image.count) bytes; the framed protocol carries at most 4 GiB")
        }
        return SessionIdentity(size: size, crc: image.crc32, version: configuration.imageVersion)
    }

    /// Reads and decodes the Status characteristic.
    public func readStatus(context: UpdateContext) async throws(OTAError) -> FramedDeviceStatus {
        let value = try await context.read(profile.status, purpose: "the framed Status characteristic")
        guard let status = FramedDeviceStatus(decoding: value) else {
            throw OTAError(.malformedResponse, "framed Status is malformed (\(value.count) bytes; expected 24 of version 1)")
        }
        return status
    }

    /// Reads Status once; when the device holds part of this image, returns where it stands with
    /// that Status as the checkpoint, so the run that follows does not read it again.
    public func resumePoint(for image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> ResumePoint<FramedDeviceStatus>? {
        let status = try await readStatus(context: context)
        guard status.identity == (try identity(of: image)), status.state == .receiving || status.state == .complete else { return nil }
        return ResumePoint(
            offset: Int(status.offset),
            detail: "device holds \(status.offset) of \(image.count) bytes of this image",
            checkpoint: status
        )
    }

    /// Sends `image`: BEGIN (continuing where the device stands), the windowed transfer, COMMIT.
    /// Drives a ``FramedSession``; with a resume point its Status is used rather than read again.
    public func run(
        _ image: FirmwareImage,
        resumingFrom point: ResumePoint<FramedDeviceStatus>?,
        context: UpdateContext
    ) async throws(OTAError) -> UpdateOutcome {
        var session = FramedSession(
            image: image, identity: try identity(of: image), batch: UInt16(configuration.batch), knownStatus: point?.checkpoint,
            version: configuration.version
        )
        let control = profile.control
        return try await context.withNotifications(from: control) { (inbox) throws(OTAError) -> UpdateOutcome in
            var action = session.start()
            while true {
                switch action {
                case .begin(let command, let readingStatus):
                    if readingStatus {
                        action = session.statusRead(try await begin(command, readingStatus: context))
                    } else {
                        try await context.write(command.encoded, to: control, kind: .withResponse, purpose: "BEGIN")
                        action = session.beginSent()
                    }
                case .awaitNotification(let awaiting, let verdict):
                    let value = try await inbox.next(timeout: verdict ? context.configuration.verifyTimeout : nil, awaiting: awaiting)
                    action = session.receive(value)
                case .position(let offset):
                    context.acknowledged(total: offset)
                    context.rewound(to: offset)
                    action = session.positioned()
                case .transfer(let offset, let batch):
                    let commit = try await transfer(image, from: offset, batch: batch, version: session.version, inbox: inbox, context: context)
                    switch commit {
                    case .notSent, .refused:
                        action = session.transferFinished()
                    case .sent:
                        context.enter(.verifying)
                        action = session.transferFinished(commitSent: true)
                    case .answered(let reply):
                        context.enter(.verifying)
                        _ = session.transferFinished(commitSent: true)
                        action = session.receive(reply)
                    }
                case .commit:
                    context.enter(.verifying)
                    try await context.write(FramedCommand.commit.encoded, to: control, kind: .withResponse, purpose: "COMMIT")
                    action = session.commitSent()
                case .note(let text, let next):
                    context.note(text)
                    action = next
                case .finished:
                    return .accepted
                case .fail(let error):
                    throw error
                }
            }
        }
    }

    /// Writes BEGIN with Status read alongside: the two requests share one round trip.
    private func begin(_ command: FramedCommand, readingStatus context: UpdateContext) async throws(OTAError) -> FramedDeviceStatus {
        async let statusRead: Result<FramedDeviceStatus, OTAError> = {
            do throws(OTAError) { return .success(try await readStatus(context: context)) } catch { return .failure(error) }
        }()
        // Let the read go out first, so Status shows the device as it was before BEGIN.
        await Task.yield()
        try await context.write(command.encoded, to: profile.control, kind: .withResponse, purpose: "BEGIN")
        return try await statusRead.get()
    }

    /// Reads Status to learn what the device holds, then, when it has a session, tells it to
    /// discard it (ABORT) and waits for its reply. A device without a session is left alone.
    public func abort(context: UpdateContext) async throws(OTAError) -> AbortOutcome {
        let profile = self.profile
        let status = try await readStatus(context: context)
        let held: String
        switch status.state {
        case .idle:
            return .nothingInProgress(detail: "its status is idle")
        case .installed:
            return .nothingInProgress(detail: "its last update, \(status.identity.size) bytes, is installed")
        case .receiving, .complete:
            held = "it held \(status.offset) of \(status.identity.size) bytes"
        case .failed:
            held = "its session had failed at byte \(status.offset) of \(status.identity.size)"
        }
        return try await context.withNotifications(from: profile.control) { (inbox) throws(OTAError) -> AbortOutcome in
            try await context.write(FramedCommand.abort.encoded, to: profile.control, kind: .withResponse, purpose: "ABORT")
            while true {
                let value = try await inbox.next(awaiting: "ABORT reply")
                switch FramedNotification(decoding: value) {
                case .abortReply(.ok): return .discarded(detail: held)
                case .abortReply(let result): throw OTAError(.deviceRejected, "device rejected ABORT: \(result)")
                case .ack, .nak: continue
                default: throw FramedSession.malformed(value, awaiting: "the ABORT reply")
                }
            }
        }
    }

    // MARK: - Steps

    /// Whether the transfer already sent COMMIT: it does so right behind the last chunk, so the
    /// device verifies as soon as the last byte is in, without waiting a round trip for the last
    /// ACK first.
    private enum EarlyCommit {
        case notSent
        case sent
        /// An early COMMIT found the image incomplete: the rest of this transfer commits only
        /// after the last ACK.
        case refused
        /// The device answered it before the window saw every byte acknowledged (it reports the
        /// verdict itself, as when it found the image already verified).
        case answered(Data)

        var awaitsReply: Bool {
            if case .sent = self { true } else { false }
        }
    }

    private func transfer(
        _ image: FirmwareImage,
        from offset: Int,
        batch: Int,
        version: UInt8,
        inbox: NotificationInbox,
        context: UpdateContext
    ) async throws(OTAError) -> EarlyCommit {
        let plan = context.chunkPlan
        // The plan leaves room for the header offered; after a fallback to version 1 it is longer.
        let header = version == FramedCommand.compactVersion ? FramedChunk.compactHeaderLength : FramedChunk.headerLength
        let payloadSize = plan.payloadSize + dataWrites.headerLength - header
        guard payloadSize > (version == FramedCommand.compactVersion ? FramedChunk.batchCheckLength : 0) else {
            throw OTAError(
                .invalidParameter, "the link's writes of \(plan.payloadSize + dataWrites.headerLength) bytes are too short for framed version \(version) chunks"
            )
        }
        let configuration = self.configuration
        let data = profile.data
        let control = profile.control
        context.enter(.transferring)
        let (window, commit) = try await context.withStallWatchdog { () async throws -> (FramedTransferWindow, EarlyCommit) in
            var window = try FramedTransferWindow(
                image: image, payloadSize: payloadSize, batch: batch,
                windowBatches: configuration.windowBatches, startingAt: offset, version: version
            )
            var commit = EarlyCommit.notSent
            while !window.isComplete {
                while let (chunk, bytes) = try window.nextWrite() {
                    try await context.writeData(bytes, to: data, covering: chunk)
                }
                if window.sent == window.size, case .notSent = commit {
                    try await context.write(FramedCommand.commit.encoded, to: control, kind: .withResponse, purpose: "COMMIT")
                    commit = .sent
                }
                let outcome = try await Self.awaitAcknowledgement(
                    &window, commit: &commit, inbox: inbox, context: context, timeout: configuration.ackTimeout
                )
                context.acknowledged(total: window.acknowledged)
                if case .fail(let error) = outcome { throw error }
                if case .answered = commit { break }
            }
            return (window, commit)
        }
        if window.naks + window.timeouts > 0 {
            context.note(
                "transfer recovered from \(window.naks) NAK(s) and \(window.timeouts) timeout(s); the window went down to \(window.smallestWindowBatches) of \(window.maximumWindowBatches) batches and ended at \(window.windowBatches)"
            )
        }
        return commit
    }

    /// Waits for an ACK or a NAK and feeds it to the window; a silence counts as a timeout. With
    /// COMMIT sent, its reply may come too: "incomplete" means bytes went missing at the end
    /// (the ACK timeout resends them; COMMIT goes again after the last ACK); any other reply is
    /// the verdict.
    private static func awaitAcknowledgement(
        _ window: inout FramedTransferWindow,
        commit: inout EarlyCommit,
        inbox: NotificationInbox,
        context: UpdateContext,
        timeout: Duration
    ) async throws(OTAError) -> FramedTransferWindow.Outcome {
        let value: Data
        do {
            value = try await inbox.next(timeout: timeout, awaiting: "acknowledgement")
        } catch {
            guard error.code == .timeout else { throw error }
            let outcome = window.timedOut()
            context.note("no acknowledgement for \(timeout.humanReadable); resending from byte \(window.acknowledged)")
            context.rewound(to: window.sent)
            return outcome
        }
        switch FramedNotification(decoding: value) {
        case .ack(let offset, let crc):
            return window.receiveACK(offset: Int(offset), runningCRC: crc)
        case .commitReply(.incomplete) where commit.awaitsReply:
            // The end was lost with nothing after it to show a gap (or a NAK's resend is under
            // way). Not rewound here: on a link whose data path died that would resend a window
            // into it; the ACK timeout rewinds, as without the early COMMIT.
            commit = .refused
            context.note("COMMIT found the image incomplete; committing again after the last ACK")
            return .proceed
        case .commitReply where commit.awaitsReply:
            commit = .answered(value)
            return .proceed
        case .nak(let reason, let offset, let crc):
            let outcome = window.receiveNAK(reason, offset: Int(offset), runningCRC: crc)
            context.note("device asked for byte \(offset) again (\(reason))")
            context.rewound(to: window.sent)
            return outcome
        default:
            throw FramedSession.malformed(value, awaiting: "an acknowledgement")
        }
    }
}
