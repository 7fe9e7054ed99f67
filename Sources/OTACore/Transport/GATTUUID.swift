/// A Bluetooth attribute UUID, 16-, 32- or 128-bit, stored in its 128-bit form.
///
/// Short UUIDs are expanded on the Bluetooth base UUID (`0000xxxx-0000-1000-8000-00805F9B34FB`),
/// so `GATTUUID("180F")` equals `GATTUUID("0000180f-0000-1000-8000-00805f9b34fb")`.
public struct GATTUUID: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The 16 bytes of the UUID, most significant first (the order in which it is written).
    public let bytes: [UInt8]

    private static let baseSuffix: [UInt8] = [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]

    /// Parses `XXXX`, `XXXXXXXX` or the dashed 128-bit form; case-insensitive. Returns `nil` for
    /// anything else.
    public init?(_ text: String) {
        let hex = text.filter { $0 != "-" }
        let dashes = text.count - hex.count
        guard hex.allSatisfy(\.isHexDigit) else { return nil }
        var parsed: [UInt8] = []
        parsed.reserveCapacity(16)
        var iterator = hex.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let byte = UInt8(String([high, low]), radix: 16) else { return nil }
            parsed.append(byte)
        }
        switch (parsed.count, dashes) {
        case (2, 0):
            bytes = [0x00, 0x00] + parsed + Self.baseSuffix
        case (4, 0):
            bytes = parsed + Self.baseSuffix
        case (16, 4):
            let groups = text.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
            guard groups == [8, 4, 4, 4, 12] else { return nil }
            bytes = parsed
        case (16, 0):
            bytes = parsed
        default:
            return nil
        }
    }

    /// Creates a UUID from its 16 bytes, most significant first.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// The lowercase dashed 128-bit form.
    public var description: String {
        [0..<4, 4..<6, 6..<8, 8..<10, 10..<16]
            .map { Hex.bytes(bytes[$0]) }
            .joined(separator: "-")
    }

    public static func < (lhs: GATTUUID, rhs: GATTUUID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
