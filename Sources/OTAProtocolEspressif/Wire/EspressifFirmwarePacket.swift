import Foundation
import OTACore

/// A write to the firmware characteristic (0x8020): the sector index (u16 LE), the packet's
/// sequence number in the sector (0, 1, 2…, 0xFF for the sector's last packet) and payload. The
/// last packet's payload ends with the CRC-16 (LE) of the whole sector's data.
public struct EspressifFirmwarePacket: Sendable, Hashable {
    /// Firmware bytes per sector; the last sector carries the remainder.
    public static let sectorSize = 4096
    /// Bytes before the payload.
    public static let headerLength = 3
    /// The sequence number of a sector's last packet.
    public static let lastSequence: UInt8 = 0xFF
    /// The smallest payload that keeps a 4096-byte sector within 255 numbered packets plus the
    /// last one (ATT MTU 23 gives exactly this).
    public static let minimumPayload = 17

    /// The sector index.
    public var sector: UInt16
    /// The sequence number.
    public var sequence: UInt8
    /// The payload (for the last packet, data then the CRC).
    public var payload: Data

    /// Creates a packet.
    public init(sector: UInt16, sequence: UInt8, payload: Data) {
        self.sector = sector
        self.sequence = sequence
        self.payload = payload
    }

    /// Whether this is the sector's last packet.
    public var isLast: Bool { sequence == Self.lastSequence }

    /// The bytes written.
    public var encoded: Data {
        var writer = ByteWriter(capacity: Self.headerLength + payload.count)
        writer.u16(sector)
        writer.u8(sequence)
        var data = writer.data
        data.append(payload)
        return data
    }

    /// Decodes a write; `nil` when shorter than the header.
    public init?(decoding value: Data) {
        guard value.count >= Self.headerLength else { return nil }
        // The header read in one look and the payload copied once (a `ByteReader` copies the
        // whole write into an array and the payload out of it again).
        let (sector, sequence) = value.withUnsafeBytes { raw in (UInt16(littleEndian: raw.loadUnaligned(as: UInt16.self)), raw[2]) }
        self.init(sector: sector, sequence: sequence, payload: value.subdata(in: (value.startIndex + Self.headerLength)..<value.endIndex))
    }

    /// One sector's data cut into packets of at most `payloadSize` bytes: numbered packets, then
    /// the 0xFF packet with the data's tail (at least one byte) and the CRC-16. Each packet comes
    /// with the range of `data` it carries.
    ///
    /// - Precondition: `1...4096` bytes of data and `payloadSize >= 17`.
    public static func packets(sector: UInt16, data: Data, payloadSize: Int) -> [(packet: EspressifFirmwarePacket, range: Range<Int>)] {
        precondition(!data.isEmpty && data.count <= sectorSize, "a sector holds 1...4096 bytes")
        precondition(payloadSize >= minimumPayload, "payload below \(minimumPayload) bytes")
        let base = data.startIndex
        var ranges: [Range<Int>] = []
        var offset = 0
        while offset < data.count {
            ranges.append(offset..<min(offset + payloadSize, data.count))
            offset += payloadSize
        }
        // The last packet needs room for the CRC: split a last piece that leaves none.
        let last = ranges.removeLast()
        let tail: Range<Int>
        if last.count <= payloadSize - 2 {
            tail = last
        } else {
            ranges.append(last.lowerBound..<(last.upperBound - 1))
            tail = (last.upperBound - 1)..<last.upperBound
        }
        var packets = ranges.enumerated().map { index, range in
            (
                packet: EspressifFirmwarePacket(sector: sector, sequence: UInt8(index), payload: data[(base + range.lowerBound)..<(base + range.upperBound)]),
                range: range
            )
        }
        let crc = EspressifCRC16.checksum(data)
        var lastPayload = Data(data[(base + tail.lowerBound)..<(base + tail.upperBound)])
        lastPayload.append(contentsOf: [UInt8(truncatingIfNeeded: crc), UInt8(crc >> 8)])
        packets.append((packet: EspressifFirmwarePacket(sector: sector, sequence: lastSequence, payload: lastPayload), range: tail))
        return packets
    }
}
