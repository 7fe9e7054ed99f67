import Foundation
import OTACore

/// The client's side of a framed session around the transfer, as a value-type state machine:
/// BEGIN (with the Status read alongside it), the device's answer, where to continue, COMMIT and
/// its verdict. One method per input, each returning what to do next; no I/O.
/// ``FramedClient`` performs the actions; the transfer itself is a
/// ``FramedTransferWindow``.
///
/// ```
/// idle ──start()──▶ beginning ──begin sent──▶ awaitingBegin ──0x90 ok──▶ positioned ──positioned()──▶ transferring
///                                                  │ installed                │ nothing left              │ transferFinished()
///                                                  ▼                          ▼                           ▼
///                                                 done ◀──── 0x91 ok ──── awaitingCommit ◀──commitSent()── committing
/// ```
///
/// ACKs and NAKs that arrive while a reply is awaited (late ones from before BEGIN) are skipped.
/// Any refusal, malformed notification or out-of-order input ends in ``Action/fail(_:)``.
public struct FramedSession: Sendable {
    /// Where the session stands.
    public enum State: Sendable, Hashable {
        /// Nothing sent yet.
        case idle
        /// BEGIN (and maybe the Status read) is on its way.
        case beginning
        /// Waiting for BEGIN's reply.
        case awaitingBegin
        /// The device said where to continue; the driver sets progress and position.
        case positioned
        /// The transfer window runs.
        case transferring
        /// COMMIT is on its way.
        case committing
        /// Waiting for the device's verdict.
        case awaitingCommit
        /// The device accepted the image (or already ran it).
        case done
        /// The session failed.
        case failed
    }

    /// What the driver must do next.
    public indirect enum Action: Sendable {
        /// Write BEGIN on Control with response. When `readingStatus`, read Status alongside it
        /// (the read first, so it shows the device as it was before BEGIN) and pass it to
        /// ``statusRead(_:)``; otherwise call ``beginSent()``.
        case begin(FramedCommand, readingStatus: Bool)
        /// Wait for the next notification on Control and pass it to ``receive(_:)``. `verdict`:
        /// the device is checking the whole image, so wait the verify timeout rather than the
        /// response timeout.
        case awaitNotification(awaiting: String, verdict: Bool)
        /// The device holds `[0, offset)`: report it as acknowledged, move the position there, and
        /// call ``positioned()``.
        case position(at: Int)
        /// Send the image from `offset` in a ``FramedTransferWindow`` with ACKs every `batch`
        /// chunks, then call ``transferFinished()``.
        case transfer(from: Int, batch: Int)
        /// Enter verifying, write COMMIT on Control with response, then call ``commitSent()``.
        case commit
        /// Log `text`, then perform `then`.
        case note(String, then: Action)
        /// The device accepted the image.
        case finished
        /// The update failed.
        case fail(OTAError)
    }

    /// The current state.
    public private(set) var state: State = .idle
    /// The identity BEGIN announces.
    public let identity: SessionIdentity
    private let imageName: String
    private let imageSize: Int
    private let batch: UInt16
    private var knownStatus: FramedDeviceStatus?
    private var offset = 0
    private var deviceBatch = 1
    private var transferNeeded = false
    /// Whether the Status came with the resume point, whose detail the engine has already shown.
    private var statusAlreadyReported: Bool
    /// The chunk format: the version BEGIN offers, and once the device has answered, the one it
    /// accepted. A device that refuses version 2 with status 06 is asked again in version 1.
    public private(set) var version: UInt8

    /// Prepares a session for `image` announced as `identity`, asking for ACKs every `batch`
    /// chunks.
    ///
    /// - Parameters:
    ///   - knownStatus: the device's Status as read just before on this connection (the resume
    ///     checkpoint); the session then does not read it again, nor note it a second time (the
    ///     engine shows the resume point's "device holds …").
    ///   - version: the highest protocol version to offer (2: compact chunks; 1: offset and CRC
    ///     per chunk).
    public init(
        image: FirmwareImage,
        identity: SessionIdentity,
        batch: UInt16,
        knownStatus: FramedDeviceStatus? = nil,
        version: UInt8 = FramedCommand.compactVersion
    ) {
        statusAlreadyReported = knownStatus != nil
        self.version = version
        self.identity = identity
        imageName = image.name
        imageSize = image.count
        self.batch = batch
        self.knownStatus = knownStatus
    }

    /// Begins the exchange.
    public mutating func start() -> Action {
        precondition(state == .idle, "start() called twice")
        state = .beginning
        return .begin(.begin(identity, batch: batch, version: version), readingStatus: knownStatus == nil)
    }

    /// BEGIN was written and `status` is what Status read alongside it.
    public mutating func statusRead(_ status: FramedDeviceStatus) -> Action {
        knownStatus = status
        return beginSent()
    }

    /// BEGIN was written.
    public mutating func beginSent() -> Action {
        guard state == .beginning else { return outOfOrder("BEGIN sent") }
        state = .awaitingBegin
        let awaiting = Action.awaitNotification(awaiting: "BEGIN reply", verdict: false)
        guard let status = knownStatus, status.state != .idle, !statusAlreadyReported else { return awaiting }
        statusAlreadyReported = true
        let same = status.identity == identity ? "this image" : "another image (\(status.identity))"
        return .note("device status before BEGIN: \(status.state), \(status.offset) bytes of \(same)", then: awaiting)
    }

    /// The device notified `value` on Control.
    public mutating func receive(_ value: Data) -> Action {
        let notification = FramedNotification(decoding: value)
        switch (state, notification) {
        case (.awaitingBegin, .beginReply(let result, let deviceState, let offset, let batch)):
            return beginReplied(result, state: deviceState, offset: offset, batch: batch)
        case (.awaitingBegin, .ack), (.awaitingBegin, .nak):
            return .awaitNotification(awaiting: "BEGIN reply", verdict: false)  // late, from before BEGIN
        case (.awaitingBegin, _):
            return fail(Self.malformed(value, awaiting: "the BEGIN reply"))
        case (.awaitingCommit, .commitReply(let result)):
            return commitReplied(result)
        case (.awaitingCommit, .ack), (.awaitingCommit, .nak):
            return .awaitNotification(awaiting: "COMMIT reply", verdict: true)
        case (.awaitingCommit, _):
            return fail(Self.malformed(value, awaiting: "the COMMIT reply"))
        default:
            return outOfOrder("a notification")
        }
    }

    /// The device's progress and the position were set to the offset of ``Action/position(at:)``.
    public mutating func positioned() -> Action {
        guard state == .positioned else { return outOfOrder("positioned()") }
        guard transferNeeded else {
            state = .committing
            return .commit
        }
        state = .transferring
        return .transfer(from: offset, batch: deviceBatch)
    }

    /// The transfer window reported every byte acknowledged. `commitSent`: the transfer already
    /// wrote COMMIT right behind the last chunk, so only its reply is awaited.
    public mutating func transferFinished(commitSent: Bool = false) -> Action {
        guard state == .transferring else { return outOfOrder("transferFinished()") }
        guard !commitSent else {
            state = .awaitingCommit
            return .awaitNotification(awaiting: "COMMIT reply", verdict: true)
        }
        state = .committing
        return .commit
    }

    /// COMMIT was written.
    public mutating func commitSent() -> Action {
        guard state == .committing else { return outOfOrder("COMMIT sent") }
        state = .awaitingCommit
        return .awaitNotification(awaiting: "COMMIT reply", verdict: true)
    }

    // MARK: - Replies

    private mutating func beginReplied(_ result: FramedResult, state deviceState: FramedSessionState, offset: UInt32, batch: UInt16) -> Action {
        switch result {
        case .ok: break
        case .invalidParameter where version > FramedCommand.protocolVersion:
            // A version-1 device refuses any other version with 06: ask again in version 1.
            version = FramedCommand.protocolVersion
            self.state = .beginning
            return .note(
                "device refused framed protocol version \(FramedCommand.compactVersion) (\(result)); using version 1",
                then: .begin(.begin(identity, batch: self.batch, version: version), readingStatus: false)
            )
        case .tooLarge:
            return fail(OTAError(.imageTooLarge, "device rejected BEGIN: \(result): \(imageName) (\(imageSize) bytes) does not fit its update slot"))
        default:
            return fail(OTAError(.deviceRejected, "device rejected BEGIN: \(result)"))
        }
        guard Int(offset) <= imageSize, batch >= 1 else {
            return fail(OTAError(.malformedResponse, "device answered BEGIN with offset \(offset) and batch \(batch) for a \(imageSize)-byte image"))
        }
        switch deviceState {
        case .installed:
            state = .done
            return .note("device already runs this image; nothing to send", then: .finished)
        case .complete, .receiving:
            state = .positioned
            self.offset = Int(offset)
            deviceBatch = Int(batch)
            transferNeeded = deviceState == .receiving || Int(offset) < imageSize
            let position = Action.position(at: Int(offset))
            guard offset > 0 else { return position }
            // Status reports the offset the device last recorded in flash; BEGIN first records
            // what it received since, so the reply can be further on.
            if let status = knownStatus, status.identity == identity, status.offset < offset {
                return .note(
                    "continuing at byte \(offset) of \(imageSize): the device had received \(offset - status.offset) bytes past the \(status.offset) it had recorded, and recorded them at BEGIN",
                    then: position
                )
            }
            return .note("continuing at byte \(offset) of \(imageSize)", then: position)
        default:
            return fail(OTAError(.malformedResponse, "device answered BEGIN in state \(deviceState)"))
        }
    }

    private mutating func commitReplied(_ result: FramedResult) -> Action {
        switch result {
        case .ok:
            state = .done
            return .finished
        case .crcMismatch:
            return fail(
                OTAError(
                    .verificationFailed,
                    "device rejected COMMIT: \(FramedResult.crcMismatch): the image in its flash differs from this one; it restarts the session, run the update again"
                )
            )
        case .incomplete:
            return fail(OTAError(.verificationFailed, "device rejected COMMIT: \(FramedResult.incomplete): it has not received every byte"))
        default:
            return fail(OTAError(.deviceRejected, "device rejected COMMIT: \(result)"))
        }
    }

    private mutating func fail(_ error: OTAError) -> Action {
        state = .failed
        return .fail(error)
    }

    private mutating func outOfOrder(_ input: String) -> Action {
        fail(OTAError(.internal, "framed session received \(input) while \(state)"))
    }

    static func malformed(_ value: Data, awaiting purpose: String) -> OTAError {
        let hex = Hex.bytes(value, uppercase: true, separator: " ")
        return OTAError(.malformedResponse, "malformed notification on framed Control while waiting for \(purpose): [\(hex)]")
    }
}
