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
    /// The payload (for the last packet, data then the CRC). A decoded packet's payload is a
    /// slice of the write it came from: its indices are the write's, not from zero.
    public var payload: Data

    /// Creates a packet.
    public init(sector: UInt16, sequence: UInt8, payload: Data) {
        self.sector = sector
        self.sequence = sequence
        self.payload = payload
    }

    /// Whether this is the sector's last packet.
    public var isLast: Bool { sequence == Self.lastSequence }

    /// The bytes written, built in one allocation (a header writer and an append would make
    /// two or three per packet, and a sector is 17 to 241 packets).
    public var encoded: Data {
        var data = Data(count: Self.headerLength + payload.count)
        data.withUnsafeMutableBytes { raw in
            raw[0] = UInt8(truncatingIfNeeded: sector)
            raw[1] = UInt8(truncatingIfNeeded: sector >> 8)
            raw[2] = sequence
            payload.withUnsafeBytes { source in
                if let base = source.baseAddress, source.count > 0 {
                    raw.baseAddress!.advanced(by: Self.headerLength).copyMemory(from: base, byteCount: source.count)
                }
            }
        }
        return data
    }

    /// Decodes a write; `nil` when shorter than the header.
    public init?(decoding value: Data) {
        guard value.count >= Self.headerLength else { return nil }
        // The header read in one look and the payload a slice of the write, sharing its storage:
        // a device appends it to its sector buffer, so a copy here (an allocation and a free
        // per packet) bought nothing.
        let (sector, sequence) = value.withUnsafeBytes { raw in (UInt16(littleEndian: raw.loadUnaligned(as: UInt16.self)), raw[2]) }
        self.init(sector: sector, sequence: sequence, payload: value[(value.startIndex + Self.headerLength)...])
    }

    /// One sector's data cut into packets of at most `payloadSize` bytes: numbered packets, then
    /// the 0xFF packet with the data's tail (at least one byte) and the CRC-16. Each packet comes
    /// with the range of `data` it carries.
    ///
    /// - Precondition: `1...4096` bytes of data and `payloadSize >= 17`.
    public static func packets(sector: UInt16, data: Data, payloadSize: Int) -> [(packet: EspressifFirmwarePacket, range: Range<Int>)] {
        let (ranges, tail) = layout(count: data.count, payloadSize: payloadSize)
        let base = data.startIndex
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

    /// The same packets as ``packets(sector:data:payloadSize:)``, already encoded: every write's
    /// bytes (header, payload, and the CRC-16 in the last) written into one buffer for the whole
    /// sector, straight from `data`, each write a slice of it, with the range of `data` it
    /// carries. What the client sends: one allocation per sector rather than two per packet
    /// (at MTU 23, 241 packets), no packet values, no copy of the last piece.
    ///
    /// - Precondition: `1...4096` bytes of data and `payloadSize >= 17`.
    public static func writes(sector: UInt16, data: Data, payloadSize: Int) -> [(bytes: Data, range: Range<Int>)] {
        let (ranges, tail) = layout(count: data.count, payloadSize: payloadSize)
        let packetCount = ranges.count + 1
        var buffer = Data(count: headerLength * packetCount + data.count + 2)
        // Each packet's place in `buffer` and the range of `data` it carries, as written.
        var frames: [(bytes: Range<Int>, range: Range<Int>)] = []
        frames.reserveCapacity(packetCount)
        buffer.withUnsafeMutableBytes { raw in
            data.withUnsafeBytes { source in
                var position = 0
                func put(_ sequence: UInt8, _ range: Range<Int>, crc: UInt16?) {
                    let start = position
                    raw[position] = UInt8(truncatingIfNeeded: sector)
                    raw[position + 1] = UInt8(truncatingIfNeeded: sector >> 8)
                    raw[position + 2] = sequence
                    raw.baseAddress!.advanced(by: position + headerLength).copyMemory(from: source.baseAddress! + range.lowerBound, byteCount: range.count)
                    position += headerLength + range.count
                    if let crc {
                        raw[position] = UInt8(truncatingIfNeeded: crc)
                        raw[position + 1] = UInt8(truncatingIfNeeded: crc >> 8)
                        position += 2
                    }
                    frames.append((start..<position, range))
                }
                for (index, range) in ranges.enumerated() { put(UInt8(index), range, crc: nil) }
                put(lastSequence, tail, crc: EspressifCRC16.checksum(source))
                precondition(position == raw.count, "sector packets encoded to \(position) bytes, sized for \(raw.count)")
            }
        }
        let base = buffer.startIndex
        return frames.map { frame in (buffer[(base + frame.bytes.lowerBound)..<(base + frame.bytes.upperBound)], frame.range) }
    }

    /// How `count` bytes of a sector are cut: the numbered packets' ranges and the last one's
    /// (at least one byte, with room for the CRC).
    private static func layout(count: Int, payloadSize: Int) -> (numbered: [Range<Int>], tail: Range<Int>) {
        precondition(count > 0 && count <= sectorSize, "a sector holds 1...4096 bytes")
        precondition(payloadSize >= minimumPayload, "payload below \(minimumPayload) bytes")
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(count / payloadSize + 2)
        var offset = 0
        while offset < count {
            ranges.append(offset..<min(offset + payloadSize, count))
            offset += payloadSize
        }
        // The last packet needs room for the CRC: split a last piece that leaves none.
        let last = ranges.removeLast()
        if last.count <= payloadSize - 2 { return (ranges, last) }
        ranges.append(last.lowerBound..<(last.upperBound - 1))
        return (ranges, (last.upperBound - 1)..<last.upperBound)
    }
}
