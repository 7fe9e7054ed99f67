import Foundation

/// A command written to OTA Control. All integers are little-endian.
///
/// | command | bytes |
/// |---|---|
/// | START  | `0x01`, size (u32), CRC-32 of the image (u32) |
/// | COMMIT | `0x02`, CRC-32 of the image (u32) |
/// | ABORT  | `0x03` |
public enum GenericCommand: Sendable, Hashable, CustomStringConvertible {
    /// Begin an update of `size` bytes whose CRC-32 is `crc`.
    case start(size: UInt32, crc: UInt32)
    /// All bytes sent; verify against `crc` and make the image bootable.
    case commit(crc: UInt32)
    /// Forget the update in progress.
    case abort

    /// The op code of START.
    public static let startOpCode: UInt8 = 0x01
    /// The op code of COMMIT.
    public static let commitOpCode: UInt8 = 0x02
    /// The op code of ABORT.
    public static let abortOpCode: UInt8 = 0x03

    /// The bytes on the wire.
    public var encoded: Data {
        switch self {
        case .start(let size, let crc):
            Data([Self.startOpCode]) + size.littleEndianBytes + crc.littleEndianBytes
        case .commit(let crc):
            Data([Self.commitOpCode]) + crc.littleEndianBytes
        case .abort:
            Data([Self.abortOpCode])
        }
    }

    /// Parses a command, as the device does. Trailing bytes are ignored, as the seed firmware
    /// ignores them; short commands are rejected.
    public init?(decoding bytes: Data) {
        let bytes = [UInt8](bytes)
        switch bytes.first {
        case Self.startOpCode where bytes.count >= 9:
            self = .start(size: UInt32(littleEndian: bytes, at: 1), crc: UInt32(littleEndian: bytes, at: 5))
        case Self.commitOpCode where bytes.count >= 5:
            self = .commit(crc: UInt32(littleEndian: bytes, at: 1))
        case Self.abortOpCode:
            self = .abort
        default:
            return nil
        }
    }

    /// "START", "COMMIT" or "ABORT".
    public var description: String {
        switch self {
        case .start: "START"
        case .commit: "COMMIT"
        case .abort: "ABORT"
        }
    }
}

extension UInt32 {
    var littleEndianBytes: Data {
        Data([UInt8(truncatingIfNeeded: self), UInt8(truncatingIfNeeded: self >> 8), UInt8(truncatingIfNeeded: self >> 16), UInt8(truncatingIfNeeded: self >> 24)])
    }

    init(littleEndian bytes: [UInt8], at offset: Int) {
        self = UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }
}
