/// The LE physical layer, which sets the bit rate and so the air time of every packet.
public enum PHY: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// LE 1M: 1 Mbit/s.
    case le1M = "1M"
    /// LE 2M: 2 Mbit/s (Bluetooth 5).
    case le2M = "2M"
    /// LE Coded, S=8: long range, 125 kbit/s.
    case coded = "coded"

    /// Air time of one LL data packet carrying `payload` bytes of LL payload (unencrypted).
    ///
    /// 1M: (1 preamble + 4 access address + 2 header + payload + 3 CRC) bytes × 8 µs.
    /// 2M: (2 preamble + 4 + 2 + payload + 3) bytes × 4 µs.
    /// Coded S=8: 80 µs preamble + 256 µs access address + 16 µs CI + 24 µs TERM1
    /// + (2 + payload + 3) bytes × 64 µs + 24 µs TERM2.
    /// See `docs/simulator.md` for the sources.
    public func airTime(payload: Int) -> Duration {
        switch self {
        case .le1M: .exactMicroseconds((10 + payload) * 8)
        case .le2M: .exactMicroseconds((11 + payload) * 4)
        case .coded: .exactMicroseconds(80 + 256 + 16 + 24 + (5 + payload) * 64 + 24)
        }
    }

    /// ``airTime(payload:)`` as a line, in microseconds: `fixed + perByte × payload`.
    var airTimeMicroseconds: (fixed: Int, perByte: Int) {
        switch self {
        case .le1M: (80, 8)
        case .le2M: (44, 4)
        case .coded: (80 + 256 + 16 + 24 + 5 * 64 + 24, 64)
        }
    }

    public var description: String {
        switch self {
        case .le1M: "LE 1M"
        case .le2M: "LE 2M"
        case .coded: "LE Coded S=8"
        }
    }
}
