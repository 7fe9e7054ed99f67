import OTACore

/// A status byte in a generic-protocol reply, as the seed ESP-IDF firmware sends it.
public struct GenericStatus: WireCode {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x00: accepted.
    public static let ok = GenericStatus(rawValue: 0x00)
    /// 0x01: the CRC-32 of what the device holds differs from the announced one.
    public static let crcMismatch = GenericStatus(rawValue: 0x01)
    /// 0x02: the device received a different number of bytes than START announced.
    public static let sizeMismatch = GenericStatus(rawValue: 0x02)
    /// 0xFF: the flash (or `esp_ota_begin` / `esp_ota_end`) failed.
    public static let flashError = GenericStatus(rawValue: 0xFF)

    public static let meanings: [GenericStatus: String] = [
        .ok: "ok", .crcMismatch: "CRC mismatch", .sizeMismatch: "size mismatch", .flashError: "flash error",
    ]

    public static func meaning(ofUnknown rawValue: UInt8) -> String { "unknown status" }

    /// "status 0xFF, flash error".
    public var description: String { "status \(hexCode), \(meaning)" }
}
