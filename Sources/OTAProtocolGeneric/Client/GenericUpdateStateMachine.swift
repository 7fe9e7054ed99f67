import Foundation
import OTACore

/// The client's side of the generic protocol as a value-type state machine: one method per
/// input, each returning what to do next. No I/O; ``GenericClient`` performs the actions.
///
/// ```
/// idle ──start()──▶ awaitingStart ──0x81 00──▶ streaming ──streamFinished()──▶ awaitingCommit ──0x82 00──▶ done
///                        │ 0x81 xx                                                   │ 0x82 xx
///                        ▼                                                           ▼
///                      failed ◀───────────── malformed or unexpected reply ───────  failed
/// ```
///
/// `0x82 02` (size mismatch) fails as ``OTAError/Code/transport``: bytes were lost on the link, so
/// the engine treats it as a lost link and starts the update over (the protocol cannot resume).
public struct GenericUpdateStateMachine: Sendable {
    /// Where the exchange stands.
    public enum State: Sendable, Hashable {
        case idle
        case awaitingStart
        case streaming
        case awaitingCommit
        case done
        case failed
    }

    /// What the driver must do next.
    public enum Action: Sendable {
        /// Write the command to OTA Control with response, then wait for a reply notification
        /// and pass it to ``receive(_:)``.
        case sendAndAwaitReply(GenericCommand)
        /// Stream the whole image on OTA Data, then call ``streamFinished()``.
        case streamImage
        /// The device accepted the image.
        case finished
        /// The update failed.
        case fail(OTAError)
    }

    /// The current state.
    public private(set) var state: State = .idle
    private let size: UInt32
    private let crc: UInt32

    /// Prepares an update of an image of `size` bytes with CRC-32 `crc`.
    public init(size: UInt32, crc: UInt32) {
        self.size = size
        self.crc = crc
    }

    /// Begins the exchange.
    public mutating func start() -> Action {
        precondition(state == .idle, "start() called twice")
        state = .awaitingStart
        return .sendAndAwaitReply(.start(size: size, crc: crc))
    }

    /// The device notified `bytes` on OTA Control.
    public mutating func receive(_ bytes: Data) -> Action {
        guard let reply = GenericReply(decoding: bytes) else {
            return fail(.malformedResponse, "malformed reply on OTA Control: \(Hex.byteList(bytes)) (expected 0x81 or 0x82 and a status byte)")
        }
        switch (state, reply) {
        case (.awaitingStart, .start(.ok)):
            state = .streaming
            return .streamImage
        case (.awaitingStart, .start(let status)):
            let hint = status == .flashError ? " (is the image larger than the device's update slot, or is its flash failing?)" : ""
            return fail(.deviceRejected, "device rejected START: \(status)\(hint)")
        case (.awaitingCommit, .commit(.ok)):
            state = .done
            return .finished
        case (.awaitingCommit, .commit(let status)):
            switch status {
            case .crcMismatch:
                return fail(.verificationFailed, "device rejected COMMIT: \(status); the image arrived corrupted, run the update again")
            case .sizeMismatch:
                // Not a refusal of the image: bytes were lost on the link (a dying link loses
                // data while its requests still get answers). A lost link, so the engine starts over.
                return fail(
                    .transport,
                    "device answered COMMIT with \(status): it received a different number of bytes than START announced, so bytes were lost on the link"
                )
            default:
                return fail(.deviceRejected, "device rejected COMMIT: \(status)")
            }
        default:
            return fail(.malformedResponse, "unexpected reply \(Hex.byteList(bytes)) on OTA Control while \(state.activity)")
        }
    }

    /// Every byte of the image was handed to the link.
    public mutating func streamFinished() -> Action {
        precondition(state == .streaming, "streamFinished() outside streaming")
        state = .awaitingCommit
        return .sendAndAwaitReply(.commit(crc: crc))
    }

    private mutating func fail(_ code: OTAError.Code, _ message: String) -> Action {
        state = .failed
        return .fail(OTAError(code, message))
    }
}

extension GenericUpdateStateMachine.State {
    var activity: String {
        switch self {
        case .idle: "idle"
        case .awaitingStart: "waiting for the START reply"
        case .streaming: "streaming data"
        case .awaitingCommit: "waiting for the COMMIT reply"
        case .done: "done"
        case .failed: "failed"
        }
    }
}
