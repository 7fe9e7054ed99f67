import Foundation
import OTACore

/// The Status characteristic: where the device's session stands (24 bytes).
public struct FramedDeviceStatus: Sendable, Hashable {
    /// The session state.
    public var state: FramedSessionState
    /// The last durable offset.
    public var offset: UInt32
    /// CRC-32 of `[0, offset)`.
    public var runningCRC: UInt32
    /// The session's identity (zero when idle).
    public var identity: SessionIdentity
    /// Largest batch the device accepts.
    public var maximumBatch: UInt16

    /// The bytes read from Status.
    public var encoded: Data {
        var writer = ByteWriter(capacity: 24)
        writer.u8(FramedCommand.protocolVersion)
        writer.u8(state.rawValue)
        writer.u32(offset)
        writer.u32(runningCRC)
        writer.u32(identity.size)
        writer.u32(identity.crc)
        writer.u32(identity.version)
        writer.u16(maximumBatch)
        return writer.data
    }
}

extension FramedDeviceStatus {
    /// Parses a Status value; `nil` unless it is 24 bytes of version 1 with a known state.
    public init?(decoding data: Data) {
        var reader = ByteReader(data)
        guard data.count == 24, reader.u8() == FramedCommand.protocolVersion, let rawState = reader.u8(),
            let state = FramedSessionState(rawValue: rawState), let offset = reader.u32(), let crc = reader.u32(),
            let size = reader.u32(), let imageCRC = reader.u32(), let version = reader.u32(), let batch = reader.u16()
        else { return nil }
        self.init(
            state: state, offset: offset, runningCRC: crc,
            identity: SessionIdentity(size: size, crc: imageCRC, version: version), maximumBatch: batch
        )
    }
}
