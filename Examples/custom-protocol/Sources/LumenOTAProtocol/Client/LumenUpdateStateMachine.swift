import Foundation
import OTACore

/// The app's side of Lumen as a value-type state machine: one method per input, each returning
/// what to do next. No I/O: ``LumenClient`` performs the actions, and the tests drive it without a
/// transport.
///
/// ```
/// idle ─start()─▶ awaitingBegin ─'b' ok─▶ sending ─imageSent()─▶ awaitingEnd ─'e' ok─▶ done
///                      │ 'b' not ok                                   │ 'e' not ok
///                      ▼                                              ▼
///                    failed ◀──────── malformed or out-of-turn reply ─ failed
/// ```
///
/// Lumen is stop-and-wait: each data write waits for the bulb's ATT acknowledgement, so sending
/// the image needs no flow control of its own and no input here.
public struct LumenUpdateStateMachine: Sendable {
    /// Where the exchange stands.
    public enum State: Sendable, Hashable {
        case idle
        case awaitingBegin
        case sending
        case awaitingEnd
        case done
        case failed
    }

    /// What the driver must do next.
    public enum Action: Sendable {
        /// Write the command with response, wait for the bulb's reply notification and pass it to
        /// ``receive(_:)``.
        case sendAndAwaitReply(LumenCommand)
        /// Send the whole image as data commands, each written with response, then call
        /// ``imageSent()``.
        case sendImage
        /// The bulb accepted the image.
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
        state = .awaitingBegin
        return .sendAndAwaitReply(.begin(size: size))
    }

    /// The bulb notified `bytes`.
    public mutating func receive(_ bytes: Data) -> Action {
        let expected: LumenReply.Step
        switch state {
        case .awaitingBegin: expected = .begin
        case .awaitingEnd: expected = .end
        default: return fail(.malformedResponse, "Lumen bulb sent a reply while \(state.activity) (\(bytes.count) bytes)")
        }
        guard let reply = LumenReply(decoding: bytes), reply.step == expected else {
            return fail(.malformedResponse, "Lumen bulb sent a malformed \(expected) reply (\(bytes.count) bytes)")
        }
        switch reply.status {
        case .ok:
            switch expected {
            case .begin:
                state = .sending
                return .sendImage
            case .end:
                state = .done
                return .finished
            }
        case .badCRC: return fail(.verificationFailed, "Lumen bulb rejected \(expected): CRC mismatch")
        case .badSize: return fail(.verificationFailed, "Lumen bulb rejected \(expected): size mismatch")
        case .tooLarge: return fail(.imageTooLarge, "Lumen bulb rejected \(expected): image too large for its slot")
        case nil: return fail(.deviceRejected, "Lumen bulb rejected \(expected): status 0x\(String(reply.statusByte, radix: 16))")
        }
    }

    /// Every data command was acknowledged by the bulb.
    public mutating func imageSent() -> Action {
        precondition(state == .sending, "imageSent() outside sending")
        state = .awaitingEnd
        return .sendAndAwaitReply(.end(crc: crc))
    }

    private mutating func fail(_ code: OTAError.Code, _ message: String) -> Action {
        state = .failed
        return .fail(OTAError(code, message))
    }
}

extension LumenUpdateStateMachine.State {
    /// What the exchange is doing, for messages.
    var activity: String {
        switch self {
        case .idle: "idle"
        case .awaitingBegin: "waiting for the begin reply"
        case .sending: "sending data"
        case .awaitingEnd: "waiting for the end reply"
        case .done: "done"
        case .failed: "failed"
        }
    }
}
