/// A status byte in a generic-protocol reply, as the seed ESP-IDF firmware sends it.
public struct GenericStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
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

    /// The status's meaning in a few words.
    public var meaning: String {
        switch self {
        case .ok: "ok"
        case .crcMismatch: "CRC mismatch"
        case .sizeMismatch: "size mismatch"
        case .flashError: "flash error"
        default: "unknown status"
        }
    }

    /// "status 0xFF, flash error".
    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        return "status 0x\(rawValue < 0x10 ? "0" : "")\(hex), \(meaning)"
    }
}
