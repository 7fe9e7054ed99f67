import Foundation
import OTACore

/// A command written to Control (see docs/protocols/framed.md).
public enum FramedCommand: Sendable, Hashable, CustomStringConvertible {
    /// Open or continue the session for `identity`, asking for ACKs every `batch` chunks.
    case begin(SessionIdentity, batch: UInt16)
    /// Verify and install.
    case commit
    /// Discard the session.
    case abort

    /// The protocol version this implementation speaks.
    public static let protocolVersion: UInt8 = 1

    /// The bytes on the wire.
    public var encoded: Data {
        var writer = ByteWriter()
        switch self {
        case .begin(let identity, let batch):
            writer.u8(0x10)
            writer.u8(Self.protocolVersion)
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
            return (.begin(SessionIdentity(size: size, crc: crc, version: imageVersion), batch: batch), version)
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
