/// The one way numbers and bytes are written in hexadecimal, for messages, reports and JSON.
///
/// ```swift
/// Hex.number(0x1F)                  // "0x1F"
/// Hex.number(0xE2E4B96 as UInt32, digits: 8)   // "0x0E2E4B96"
/// Hex.bytes([0xE4, 0x06])           // "e406" (as sha256sum prints a digest)
/// Hex.byteList([0x81, 0x00])        // "0x81 0x00"
/// ```
public enum Hex {
    /// `value` as "0x" and upper-case digits, zero-padded to at least `digits` digits.
    public static func number(_ value: some BinaryInteger, digits: Int = 1) -> String {
        "0x" + padded(value, digits: digits, uppercase: true)
    }

    /// `value`'s digits without a prefix, zero-padded to at least `digits`.
    public static func digits(_ value: some BinaryInteger, digits: Int = 1, uppercase: Bool = true) -> String {
        padded(value, digits: digits, uppercase: uppercase)
    }

    /// Two digits a byte, no separator: lower case by default, as `sha256sum` prints a digest.
    public static func bytes(_ bytes: some Sequence<UInt8>, uppercase: Bool = false, separator: String = "") -> String {
        let alphabet = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var parts: [String] = []
        for byte in bytes {
            parts.append(String(decoding: [alphabet[Int(byte >> 4)], alphabet[Int(byte & 0x0F)]], as: UTF8.self))
        }
        return parts.joined(separator: separator)
    }

    /// "0x81 0x00" style, for the bytes of a malformed reply; "(empty)" for none.
    public static func byteList(_ bytes: some Collection<UInt8>) -> String {
        bytes.isEmpty ? "(empty)" : bytes.map { number($0, digits: 2) }.joined(separator: " ")
    }

    /// The bytes that pairs of ASCII hexadecimal digits spell ("e406" → `[0xE4, 0x06]`), or
    /// `nil` for an odd count or anything but `0-9a-fA-F` (fullwidth digits included).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(digits: Array(text.utf8))
    }

    /// The bytes that pairs of ASCII hexadecimal digits spell, from their UTF-8 code units (the
    /// manifest reader strips a "0x" first), or `nil` as for ``decode(_:)``.
    static func decode(digits: [UInt8]) -> [UInt8]? {
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = digitValue(digits[index]), let low = digitValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The value of one ASCII hexadecimal digit (`0-9a-fA-F`), or `nil` for any other code unit.
    static func digitValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func padded(_ value: some BinaryInteger, digits: Int, uppercase: Bool) -> String {
        let text = String(value, radix: 16, uppercase: uppercase)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
