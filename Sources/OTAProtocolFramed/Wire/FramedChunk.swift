import Foundation
import OTACore

/// A data chunk: `offset:u32 | crc:u32 | payload`, the CRC over the payload alone.
public enum FramedChunk {
    /// Bytes of header before the payload.
    public static let headerLength = 8

    /// The bytes written for `payload` at `offset`.
    public static func encode(offset: Int, payload: Data) -> Data {
        var writer = ByteWriter(capacity: headerLength + payload.count)
        writer.u32(UInt32(offset))
        writer.u32(CRC32.checksum(payload))
        var data = writer.data
        data.append(payload)
        return data
    }

    /// Splits a chunk into offset, declared CRC and payload; `nil` when shorter than a header
    /// plus one byte.
    public static func decode(_ data: Data) -> (offset: UInt32, crc: UInt32, payload: Data)? {
        guard data.count > headerLength else { return nil }
        var reader = ByteReader(data)
        guard let offset = reader.u32(), let crc = reader.u32() else { return nil }
        return (offset, crc, reader.rest())
    }
}
