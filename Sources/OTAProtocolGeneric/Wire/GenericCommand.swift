import Foundation
import OTACore

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
        var writer = ByteWriter(capacity: 9)
        switch self {
        case .start(let size, let crc):
            writer.u8(Self.startOpCode)
            writer.u32(size)
            writer.u32(crc)
        case .commit(let crc):
            writer.u8(Self.commitOpCode)
            writer.u32(crc)
        case .abort:
            writer.u8(Self.abortOpCode)
        }
        return writer.data
    }

    /// Parses a command, as the device does. Trailing bytes are ignored, as the seed firmware
    /// ignores them; short commands are rejected.
    public init?(decoding bytes: Data) {
        var reader = ByteReader(bytes)
        switch reader.u8() {
        case Self.startOpCode:
            guard let size = reader.u32(), let crc = reader.u32() else { return nil }
            self = .start(size: size, crc: crc)
        case Self.commitOpCode:
            guard let crc = reader.u32() else { return nil }
            self = .commit(crc: crc)
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
