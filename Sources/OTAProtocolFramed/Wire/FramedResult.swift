/// A status byte in a framed-protocol reply.
public struct FramedResult: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x00: done.
    public static let ok = FramedResult(rawValue: 0x00)
    /// 0x01: the CRC-32 of the image read back from flash differs from the session's.
    public static let crcMismatch = FramedResult(rawValue: 0x01)
    /// 0x02: COMMIT before every byte arrived.
    public static let incomplete = FramedResult(rawValue: 0x02)
    /// 0x03: flash erase or write failed.
    public static let flashError = FramedResult(rawValue: 0x03)
    /// 0x04: the image is larger than the device's slot.
    public static let tooLarge = FramedResult(rawValue: 0x04)
    /// 0x05: the command does not fit the device's state (COMMIT with no session).
    public static let badState = FramedResult(rawValue: 0x05)
    /// 0x06: a parameter is invalid (unsupported version, size 0, batch 0).
    public static let invalidParameter = FramedResult(rawValue: 0x06)

    /// The meaning in a few words.
    public var meaning: String {
        switch self {
        case .ok: "ok"
        case .crcMismatch: "CRC mismatch"
        case .incomplete: "image incomplete"
        case .flashError: "flash error"
        case .tooLarge: "image larger than the slot"
        case .badState: "bad state"
        case .invalidParameter: "invalid parameter"
        default: "unknown status"
        }
    }

    /// "status 0x03, flash error".
    public var description: String {
        "status 0x\(rawValue < 0x10 ? "0" : "")\(String(rawValue, radix: 16, uppercase: true)), \(meaning)"
    }
}
