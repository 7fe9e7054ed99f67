import Foundation
import OTACore

/// A command written to Control (see docs/protocols/framed.md).
public enum FramedCommand: Sendable, Hashable, CustomStringConvertible {
    /// Open or continue the session for `identity`, asking for ACKs every `batch` chunks, with
    /// chunks in the wire format of protocol `version` (1: offset and CRC per chunk; 2: compact).
    case begin(SessionIdentity, batch: UInt16, version: UInt8 = FramedCommand.compactVersion)
    /// Verify and install.
    case commit
    /// Discard the session.
    case abort

    /// Protocol version 1: offset and CRC-32 in every chunk. Status always carries this number
    /// (its layout is the same in both versions), so clients of either version can read it.
    public static let protocolVersion: UInt8 = 1
    /// Protocol version 2: compact chunks (sequence number, a CRC-32 per batch).
    public static let compactVersion: UInt8 = 2

    /// The bytes on the wire.
    public var encoded: Data {
        var writer = ByteWriter()
        switch self {
        case .begin(let identity, let batch, let version):
            writer.u8(0x10)
            writer.u8(version)
            writer.u32(identity.size)
            writer.u32(identity.crc)
            writer.u32(identity.version)
            writer.u16(batch)
        case .commit:
            writer.u8(0x11)
        case .abort:
            writer.u8(0x12)
        }
        return writer.data
    }

    /// The decoded command, and for BEGIN its protocol version; `nil` when malformed.
    public static func decode(_ data: Data) -> (command: FramedCommand, version: UInt8)? {
        var reader = ByteReader(data)
        switch reader.u8() {
        case 0x10:
            guard data.count == 16, let version = reader.u8(), let size = reader.u32(), let crc = reader.u32(),
                let imageVersion = reader.u32(), let batch = reader.u16()
            else { return nil }
            return (.begin(SessionIdentity(size: size, crc: crc, version: imageVersion), batch: batch, version: version), version)
        case 0x11 where data.count == 1:
            return (.commit, protocolVersion)
        case 0x12 where data.count == 1:
            return (.abort, protocolVersion)
        default:
            return nil
        }
    }

    public var description: String {
        switch self {
        case .begin: "BEGIN"
        case .commit: "COMMIT"
        case .abort: "ABORT"
        }
    }
}
