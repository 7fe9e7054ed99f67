/// A Bluetooth attribute UUID, 16-, 32- or 128-bit, stored in its 128-bit form.
///
/// Short UUIDs are expanded on the Bluetooth base UUID (`0000xxxx-0000-1000-8000-00805F9B34FB`),
/// so `GATTUUID("180F")` equals `GATTUUID("0000180f-0000-1000-8000-00805f9b34fb")`.
///
/// The 128 bits are held inline, as two integers: copying, comparing and hashing a UUID (every
/// ``CharacteristicID`` holds two, and the simulated link compares them at every write) touches
/// no heap and no reference count.
public struct GATTUUID: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The first eight bytes, the first one in the most significant position.
    private let high: UInt64
    /// The last eight bytes, in the same order.
    private let low: UInt64

    /// The low half of every UUID expanded on the Bluetooth base UUID (`8000-00805F9B34FB`).
    private static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB
    /// The high half's bits below a 32-bit UUID (`-0000-1000`).
    private static let baseHigh: UInt64 = 0x0000_1000

    /// The 16 bytes of the UUID, most significant first (the order in which it is written).
    public var bytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(index)))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(index)))
        }
        return bytes
    }

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses `XXXX`, `XXXXXXXX` or the dashed 128-bit form; case-insensitive. Returns `nil` for
    /// anything else.
    public init?(_ text: String) {
        var digits: [UInt8] = []
        digits.reserveCapacity(32)
        var groups: [Int] = [0]
        for character in text {
            if character == "-" {
                groups.append(0)
                continue
            }
            guard character.isASCII, let value = character.hexDigitValue else { return nil }
            digits.append(UInt8(value))
            groups[groups.count - 1] += 1
        }
        let dashes = groups.count - 1
        switch (digits.count, dashes) {
        case (4, 0), (8, 0):
            let short = digits.reduce(UInt64(0)) { $0 << 4 | UInt64($1) }
            self.init(high: short << 32 | Self.baseHigh, low: Self.baseLow)
        case (32, 4) where groups == [8, 4, 4, 4, 12], (32, 0):
            let high = digits[..<16].reduce(UInt64(0)) { $0 << 4 | UInt64($1) }
            let low = digits[16...].reduce(UInt64(0)) { $0 << 4 | UInt64($1) }
            self.init(high: high, low: low)
        default:
            return nil
        }
    }

    /// Creates a UUID from its 16 bytes, most significant first.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.init(
            high: bytes[..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) },
            low: bytes[8...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        )
    }

    /// The lowercase dashed 128-bit form.
    public var description: String {
        let bytes = self.bytes
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16]
            .map { Hex.bytes(bytes[$0]) }
            .joined(separator: "-")
    }

    public static func < (lhs: GATTUUID, rhs: GATTUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}
