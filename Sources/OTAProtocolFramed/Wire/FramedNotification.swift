import Foundation
import OTACore

/// A notification on Control: a command reply, an ACK or a NAK.
public enum FramedNotification: Sendable, Hashable {
    /// BEGIN's reply: continue at `offset` in `state`, with ACKs every `batch` chunks.
    case beginReply(FramedResult, state: FramedSessionState, offset: UInt32, batch: UInt16)
    /// COMMIT's reply.
    case commitReply(FramedResult)
    /// ABORT's reply.
    case abortReply(FramedResult)
    /// Bytes `[0, offset)` are durably in flash, with CRC-32 `runningCRC`.
    case ack(offset: UInt32, runningCRC: UInt32)
    /// The device needs `offset` next; `reason` says why it dropped what it got.
    case nak(NAKReason, offset: UInt32, runningCRC: UInt32)

    /// Why a device refused a chunk.
    public struct NAKReason: WireCode {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The chunk's CRC-32 did not match its payload.
        public static let crcMismatch = NAKReason(rawValue: 1)
        /// The chunk was not at the expected offset (one was lost).
        public static let gap = NAKReason(rawValue: 2)
        /// Flash write failed; the session is failed.
        public static let flashError = NAKReason(rawValue: 3)
        /// No session, or past the image end.
        public static let outOfSession = NAKReason(rawValue: 4)

        public static let meanings: [NAKReason: String] = [
            .crcMismatch: "chunk CRC mismatch", .gap: "gap", .flashError: "flash write failed",
            .outOfSession: "not in a session",
        ]

        public static func meaning(ofUnknown rawValue: UInt8) -> String { "reason \(rawValue)" }
    }

    /// The bytes on the wire.
    public var encoded: Data {
        var writer = ByteWriter()
        switch self {
        case .beginReply(let result, let state, let offset, let batch):
            writer.u8(0x90)
            writer.u8(result.rawValue)
            writer.u8(state.rawValue)
            writer.u32(offset)
            writer.u16(batch)
        case .commitReply(let result):
            writer.u8(0x91)
            writer.u8(result.rawValue)
        case .abortReply(let result):
            writer.u8(0x92)
            writer.u8(result.rawValue)
        case .ack(let offset, let crc):
            writer.u8(0xA0)
            writer.u32(offset)
            writer.u32(crc)
        case .nak(let reason, let offset, let crc):
            writer.u8(0xA1)
            writer.u8(reason.rawValue)
            writer.u32(offset)
            writer.u32(crc)
        }
        return writer.data
    }

    /// Parses a notification; `nil` for anything malformed, including wrong lengths.
    public init?(decoding data: Data) {
        var reader = ByteReader(data)
        switch (reader.u8(), data.count) {
        case (0x90, 9):
            guard let result = reader.u8(), let rawState = reader.u8(), let state = FramedSessionState(rawValue: rawState),
                let offset = reader.u32(), let batch = reader.u16()
            else { return nil }
            self = .beginReply(FramedResult(rawValue: result), state: state, offset: offset, batch: batch)
        case (0x91, 2):
            self = .commitReply(FramedResult(rawValue: reader.u8()!))
        case (0x92, 2):
            self = .abortReply(FramedResult(rawValue: reader.u8()!))
        case (0xA0, 9):
            self = .ack(offset: reader.u32()!, runningCRC: reader.u32()!)
        case (0xA1, 10):
            self = .nak(NAKReason(rawValue: reader.u8()!), offset: reader.u32()!, runningCRC: reader.u32()!)
        default:
            return nil
        }
    }
}
