import Foundation
import OTACore

/// A data chunk on the Data characteristic, in either wire format (docs/protocols/framed.md):
///
/// - version 1: `offset:u32 | crc:u32 | payload`, the CRC over the payload alone;
/// - version 2 (compact): `tag:u16 | payload`, and after the payload of the last chunk of each
///   batch `batchCRC:u32`, the CRC-32 of the image prefix `[0, end of this chunk)`. The tag's low
///   15 bits are the chunk's sequence number since BEGIN, its top bit marks the batch's end.
///
/// Both encoders build the write in one allocation, without per-byte appends; a sender writes
/// a batch's chunks into one buffer (``FramedTransferWindow``).
public enum FramedChunk {
    /// Bytes of a version-1 header before the payload.
    public static let headerLength = 8
    /// Bytes of a version-2 header before the payload.
    public static let compactHeaderLength = 2
    /// Bytes of the batch check after the payload of a version-2 batch-end chunk.
    public static let batchCheckLength = 4
    /// The tag bit that marks a version-2 batch-end chunk.
    public static let batchEndFlag: UInt16 = 0x8000
    /// The tag bits that carry a version-2 sequence number (15 bits, wrapping).
    public static let sequenceMask: UInt16 = 0x7FFF
    /// Sequence numbers ahead of the expected one by less than this are a gap; the rest of the
    /// 15-bit circle is behind (duplicates). The sender keeps fewer chunks in flight.
    public static let sequenceHorizon: UInt16 = 0x4000

    /// The version-1 bytes written for `payload` at `offset`.
    public static func encode(offset: Int, payload: Data) -> Data {
        var data = Data(count: headerLength + payload.count)
        data.withUnsafeMutableBytes { raw in
            payload.withUnsafeBytes { source in _ = write(offset: offset, payload: source, into: raw, at: 0) }
        }
        return data
    }

    /// The version-2 bytes for `payload` as chunk `sequence` (taken modulo 2¹⁵); with
    /// `batchCRC`, a batch-end chunk carrying that check of the image prefix it ends.
    public static func encodeCompact(sequence: Int, payload: Data, batchCRC: UInt32?) -> Data {
        var data = Data(count: compactLength(payload: payload.count, batchEnd: batchCRC != nil))
        data.withUnsafeMutableBytes { raw in
            payload.withUnsafeBytes { source in _ = writeCompact(sequence: sequence, payload: source, batchCRC: batchCRC, into: raw, at: 0) }
        }
        return data
    }

    /// The length of a version-2 chunk of `payload` bytes.
    static func compactLength(payload: Int, batchEnd: Bool) -> Int {
        compactHeaderLength + payload + (batchEnd ? batchCheckLength : 0)
    }

    /// Writes ``encode(offset:payload:)``'s bytes into `raw` at `position`; returns the position
    /// after them. `raw` must have room.
    static func write(offset: Int, payload: UnsafeRawBufferPointer, into raw: UnsafeMutableRawBufferPointer, at position: Int) -> Int {
        precondition(position + headerLength + payload.count <= raw.count, "framed chunk buffer too small")
        var crc = CRC32()
        crc.update(payload)
        store(UInt32(truncatingIfNeeded: offset), at: position, in: raw)
        store(crc.value, at: position + 4, in: raw)
        if let base = payload.baseAddress, payload.count > 0 {
            raw.baseAddress!.advanced(by: position + headerLength).copyMemory(from: base, byteCount: payload.count)
        }
        return position + headerLength + payload.count
    }

    /// Writes ``encodeCompact(sequence:payload:batchCRC:)``'s bytes into `raw` at `position`;
    /// returns the position after them. `raw` must have room.
    static func writeCompact(
        sequence: Int, payload: UnsafeRawBufferPointer, batchCRC: UInt32?, into raw: UnsafeMutableRawBufferPointer, at position: Int
    ) -> Int {
        let end = position + compactLength(payload: payload.count, batchEnd: batchCRC != nil)
        precondition(end <= raw.count, "framed chunk buffer too small")
        var tag = UInt16(truncatingIfNeeded: sequence) & sequenceMask
        if batchCRC != nil { tag |= batchEndFlag }
        raw[position] = UInt8(truncatingIfNeeded: tag)
        raw[position + 1] = UInt8(truncatingIfNeeded: tag >> 8)
        if let base = payload.baseAddress, payload.count > 0 {
            raw.baseAddress!.advanced(by: position + compactHeaderLength).copyMemory(from: base, byteCount: payload.count)
        }
        if let batchCRC { store(batchCRC, at: position + compactHeaderLength + payload.count, in: raw) }
        return end
    }

    /// Splits a version-1 chunk into offset, declared CRC and payload; `nil` when shorter than a
    /// header plus one byte. The payload is a slice of `data` (no copy): index it from its
    /// `startIndex`.
    public static func decode(_ data: Data) -> (offset: UInt32, crc: UInt32, payload: Data)? {
        guard data.count > headerLength else { return nil }
        // One look at the bytes, not a `Data` subscript (with its checks) per byte.
        let (offset, crc) = data.withUnsafeBytes { raw in
            (UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)), UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        }
        return (offset, crc, data[(data.startIndex + headerLength)...])
    }

    /// A decoded version-2 chunk.
    public struct Compact: Sendable, Hashable {
        /// The 15-bit sequence number.
        public var sequence: UInt16
        /// The payload.
        public var payload: Data
        /// For a batch-end chunk, the CRC-32 of the image prefix it ends.
        public var batchCRC: UInt32?
    }

    /// Splits a version-2 chunk; `nil` when it has no payload byte.
    public static func decodeCompact(_ data: Data) -> Compact? {
        let count = data.count
        guard count > compactHeaderLength else { return nil }
        let start = data.startIndex
        // One look at the bytes, not a `Data` subscript (with its checks) per byte.
        let (tag, crc) = data.withUnsafeBytes { raw -> (UInt16, UInt32?) in
            let tag = UInt16(littleEndian: raw.loadUnaligned(as: UInt16.self))
            guard tag & batchEndFlag != 0, count > compactHeaderLength + batchCheckLength else { return (tag, nil) }
            return (tag, UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: count - batchCheckLength, as: UInt32.self)))
        }
        let sequence = tag & sequenceMask
        guard tag & batchEndFlag != 0 else {
            return Compact(sequence: sequence, payload: data[(start + compactHeaderLength)...], batchCRC: nil)
        }
        guard let crc else { return nil }
        return Compact(sequence: sequence, payload: data[(start + compactHeaderLength)..<(data.endIndex - batchCheckLength)], batchCRC: crc)
    }

    private static func store(_ value: UInt32, at offset: Int, in raw: UnsafeMutableRawBufferPointer) {
        raw[offset] = UInt8(truncatingIfNeeded: value)
        raw[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
        raw[offset + 2] = UInt8(truncatingIfNeeded: value >> 16)
        raw[offset + 3] = UInt8(truncatingIfNeeded: value >> 24)
    }
}
