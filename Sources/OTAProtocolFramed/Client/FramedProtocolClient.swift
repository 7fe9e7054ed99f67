import Foundation
import OTACore

/// The client side of the framed protocol: read Status, BEGIN, stream chunks in a window of
/// batches checked by ACKs, COMMIT. Resumable and abortable.
public struct FramedProtocolClient: ResumableUpdateProtocol, AbortableUpdateProtocol {
    /// Settings.
    public var configuration: FramedConfiguration

    /// Creates a client.
    public init(configuration: FramedConfiguration = FramedConfiguration()) {
        self.configuration = configuration
    }

    private var profile: FramedGATTProfile { configuration.profile }

    public var chunkHeaderLength: Int { FramedChunk.headerLength }

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

    public func resumePoint(for image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> ResumePoint? {
        let status = try await readStatus(context: context)
        guard status.identity == (try identity(of: image)), status.state == .receiving || status.state == .complete else { return nil }
        return ResumePoint(offset: Int(status.offset), detail: "device holds \(status.offset) of \(image.count) bytes of this image")
    }

    public func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) {
        let identity = try identity(of: image)
        let configuration = self.configuration
        let profile = self.profile
        try await context.withNotifications(from: profile.control) { (inbox) throws(OTAError) in
            // Read Status while BEGIN is on its way: the two requests share one round trip.
            async let statusRead: Result<FramedDeviceStatus, OTAError> = {
                do throws(OTAError) { return .success(try await readStatus(context: context)) } catch { return .failure(error) }
            }()
            // Let the read go out first, so Status shows the device as it was before BEGIN.
            await Task.yield()
            try await context.write(
                FramedCommand.begin(identity, batch: UInt16(configuration.batch)).encoded,
                to: profile.control, kind: .withResponse, purpose: "BEGIN"
            )
            let status = try await statusRead.get()
            if status.state != .idle {
                let same = status.identity == identity ? "this image" : "another image (\(status.identity))"
                context.note("device status before BEGIN: \(status.state), \(status.offset) bytes of \(same)")
            }
            let (result, state, offset, batch) = try await Self.awaitBeginReply(inbox)
            switch result {
            case .ok: break
            case .tooLarge:
                throw OTAError(.imageTooLarge, "device rejected BEGIN: \(result): \(image.name) (\(image.count) bytes) does not fit its update slot")
            default:
                throw OTAError(.deviceRejected, "device rejected BEGIN: \(result)")
            }
            guard Int(offset) <= image.count, batch >= 1 else {
                throw OTAError(.malformedResponse, "device answered BEGIN with offset \(offset) and batch \(batch) for a \(image.count)-byte image")
            }
            switch state {
            case .installed:
                context.note("device already runs this image; nothing to send")
                return
            case .complete, .receiving:
                if offset > 0 { context.note("continuing at byte \(offset) of \(image.count)") }
                context.acknowledged(total: Int(offset))
                context.rewound(to: Int(offset))
                if state == .receiving || Int(offset) < image.count {
                    try await transfer(image, from: Int(offset), batch: Int(batch), inbox: inbox, context: context)
                }
            default:
                throw OTAError(.malformedResponse, "device answered BEGIN in state \(state)")
            }
            try await commit(inbox: inbox, context: context)
        }
    }

    public func abort(context: UpdateContext) async throws(OTAError) {
        let profile = self.profile
        try await context.withNotifications(from: profile.control) { (inbox) throws(OTAError) in
            try await context.write(FramedCommand.abort.encoded, to: profile.control, kind: .withResponse, purpose: "ABORT")
            while true {
                let value = try await inbox.next(awaiting: "ABORT reply")
                switch FramedNotification(decoding: value) {
                case .abortReply(.ok): return
                case .abortReply(let result): throw OTAError(.deviceRejected, "device rejected ABORT: \(result)")
                case .ack, .nak: continue
                default: throw Self.malformed(value, awaiting: "the ABORT reply")
                }
            }
        }
    }

    // MARK: - Steps

    private static func awaitBeginReply(
        _ inbox: NotificationInbox
    ) async throws(OTAError) -> (FramedResult, FramedSessionState, UInt32, UInt16) {
        while true {
            let value = try await inbox.next(awaiting: "BEGIN reply")
            switch FramedNotification(decoding: value) {
            case .beginReply(let result, let state, let offset, let batch): return (result, state, offset, batch)
            case .ack, .nak: continue  // late notifications from before BEGIN
            default: throw malformed(value, awaiting: "the BEGIN reply")
            }
        }
    }

    private func transfer(
        _ image: FirmwareImage,
        from offset: Int,
        batch: Int,
        inbox: NotificationInbox,
        context: UpdateContext
    ) async throws(OTAError) {
        let plan = try context.chunkPlan(headerLength: chunkHeaderLength)
        let configuration = self.configuration
        let data = profile.data
        context.enter(.transferring)
        let window = try await context.withStallWatchdog { () async throws -> FramedTransferWindow in
            var window = FramedTransferWindow(
                image: image, payloadSize: plan.payloadSize, batch: batch,
                windowBatches: configuration.windowBatches, startingAt: offset
            )
            while !window.isComplete {
                while let chunk = window.nextChunk() {
                    try await context.writeData(FramedChunk.encode(offset: chunk.lowerBound, payload: image[chunk]), to: data, covering: chunk)
                }
                let outcome = try await Self.awaitAcknowledgement(&window, inbox: inbox, context: context, timeout: configuration.ackTimeout)
                context.acknowledged(total: window.acknowledged)
                if case .fail(let code, let message) = outcome { throw OTAError(code, message) }
            }
            return window
        }
        if window.naks + window.timeouts > 0 {
            context.note("transfer recovered from \(window.naks) NAK(s) and \(window.timeouts) timeout(s)")
        }
    }

    /// Waits for an ACK or a NAK and feeds it to the window; a silence counts as a timeout.
    private static func awaitAcknowledgement(
        _ window: inout FramedTransferWindow,
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
        case .nak(let reason, let offset, let crc):
            let outcome = window.receiveNAK(reason, offset: Int(offset), runningCRC: crc)
            context.note("device asked for byte \(offset) again (\(reason))")
            context.rewound(to: window.sent)
            return outcome
        default:
            throw malformed(value, awaiting: "an acknowledgement")
        }
    }

    private func commit(inbox: NotificationInbox, context: UpdateContext) async throws(OTAError) {
        context.enter(.verifying)
        try await context.write(FramedCommand.commit.encoded, to: profile.control, kind: .withResponse, purpose: "COMMIT")
        while true {
            let value = try await inbox.next(timeout: context.configuration.verifyTimeout, awaiting: "COMMIT reply")
            switch FramedNotification(decoding: value) {
            case .commitReply(.ok):
                return
            case .commitReply(.crcMismatch):
                throw OTAError(
                    .verificationFailed,
                    "device rejected COMMIT: \(FramedResult.crcMismatch): the image in its flash differs from this one; it restarts the session, run the update again"
                )
            case .commitReply(.incomplete):
                throw OTAError(.verificationFailed, "device rejected COMMIT: \(FramedResult.incomplete): it has not received every byte")
            case .commitReply(let result):
                throw OTAError(.deviceRejected, "device rejected COMMIT: \(result)")
            case .ack, .nak:
                continue
            default:
                throw Self.malformed(value, awaiting: "the COMMIT reply")
            }
        }
    }

    private static func malformed(_ value: Data, awaiting purpose: String) -> OTAError {
        let hex = value.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: " ")
        return OTAError(.malformedResponse, "malformed notification on framed Control while waiting for \(purpose): [\(hex)]")
    }
}
