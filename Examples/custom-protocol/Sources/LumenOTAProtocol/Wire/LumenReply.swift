import Foundation

/// A reply the bulb notifies on its characteristic: `'b'` status after begin, `'e'` status after
/// end. Unknown status bytes are kept, so a message can name them.
public struct LumenReply: Sendable, Hashable {
    /// Which command the reply answers.
    public enum Step: UInt8, Sendable, Hashable, CustomStringConvertible {
        /// `'b'`: the answer to begin.
        case begin = 0x62
        /// `'e'`: the answer to end.
        case end = 0x65

        /// "begin" or "end".
        public var description: String {
            switch self {
            case .begin: "begin"
            case .end: "end"
            }
        }
    }

    /// Which command it answers.
    public var step: Step
    /// The status byte as sent.
    public var statusByte: UInt8

    /// Creates a reply with a known status.
    public init(_ step: Step, _ status: LumenStatus) {
        self.init(step, statusByte: status.rawValue)
    }

    /// Creates a reply with any status byte.
    public init(_ step: Step, statusByte: UInt8) {
        self.step = step
        self.statusByte = statusByte
    }

    /// The status, when the byte is one Lumen defines.
    public var status: LumenStatus? { LumenStatus(rawValue: statusByte) }

    /// The bytes on the wire.
    public var encoded: Data { Data([step.rawValue, statusByte]) }

    /// Parses a notification; `nil` unless it is exactly two bytes starting with `'b'` or `'e'`.
    public init?(decoding bytes: Data) {
        let bytes = [UInt8](bytes)
        guard bytes.count == 2, let step = Step(rawValue: bytes[0]) else { return nil }
        self.init(step, statusByte: bytes[1])
    }
}

/// Lumen's reply statuses.
public enum LumenStatus: UInt8, Sendable {
    /// Accepted.
    case ok = 0
    /// At end: the CRC-32 of what flash holds differs from the announced one.
    case badCRC = 1
    /// At end: the bulb received a different number of bytes than begin announced.
    case badSize = 2
    /// At begin: the image does not fit the bulb's update slot.
    case tooLarge = 3
}
