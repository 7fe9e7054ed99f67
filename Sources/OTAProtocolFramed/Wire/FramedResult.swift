import OTACore

/// A status byte in a framed-protocol reply.
public struct FramedResult: WireCode {
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

    public static let meanings: [FramedResult: String] = [
        .ok: "ok", .crcMismatch: "CRC mismatch", .incomplete: "image incomplete", .flashError: "flash error",
        .tooLarge: "image larger than the slot", .badState: "bad state", .invalidParameter: "invalid parameter",
    ]

    public static func meaning(ofUnknown rawValue: UInt8) -> String { "unknown status" }

    /// "status 0x03, flash error".
    public var description: String { "status \(hexCode), \(meaning)" }
}
