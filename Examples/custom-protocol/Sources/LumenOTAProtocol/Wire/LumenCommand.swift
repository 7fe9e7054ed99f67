import Foundation

/// Lumen's three commands, written with response to its one characteristic.
///
/// | command | bytes | reply (notified) |
/// |---|---|---|
/// | begin | `'B'` size:u32 | `'b'` status |
/// | data  | `'D'` payload | — (the ATT write response is the acknowledgement) |
/// | end   | `'E'` crc:u32 | `'e'` status |
public enum LumenCommand: Sendable, Hashable, CustomStringConvertible {
    /// Begin an update of `size` bytes.
    case begin(size: UInt32)
    /// One chunk of the image, in order.
    case data(Data)
    /// All bytes sent: check them against `crc` (CRC-32) and install.
    case end(crc: UInt32)

    /// Bytes of header before a data payload.
    public static let dataHeaderLength = 1

    /// The bytes on the wire.
    public var encoded: Data {
        switch self {
        case .begin(let size): Data([UInt8(ascii: "B")]) + Self.littleEndian(size)
        case .data(let payload): Data([UInt8(ascii: "D")]) + payload
        case .end(let crc): Data([UInt8(ascii: "E")]) + Self.littleEndian(crc)
        }
    }

    /// Parses a command, as the bulb does.
    public init?(decoding bytes: Data) {
        let bytes = [UInt8](bytes)
        switch (bytes.first, bytes.count) {
        case (UInt8(ascii: "B"), 5): self = .begin(size: Self.readLittleEndian(bytes, at: 1))
        case (UInt8(ascii: "D"), 2...): self = .data(Data(bytes[1...]))
        case (UInt8(ascii: "E"), 5): self = .end(crc: Self.readLittleEndian(bytes, at: 1))
        default: return nil
        }
    }

    /// "begin", "data" or "end", as messages name the steps.
    public var description: String {
        switch self {
        case .begin: "begin"
        case .data: "data"
        case .end: "end"
        }
    }

    private static func littleEndian(_ value: UInt32) -> Data {
        Data((0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) })
    }

    private static func readLittleEndian(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }
}
