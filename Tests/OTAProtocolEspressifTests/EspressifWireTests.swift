import Foundation
import OTACore
import OTATransportSimulator
import Testing

@testable import OTAProtocolEspressif

@Suite struct EspressifWireTests {
    @Test func crc16IsXMODEM() {
        #expect(EspressifCRC16.checksum(Array("123456789".utf8)) == 0x31C3)
        #expect(EspressifCRC16.checksum([]) == 0)
    }

    @Test func startIsTwentyBytesWithTheLengthAndCRC() {
        let bytes = [UInt8](EspressifCommand.start(length: 0x0003_2000).encoded)
        #expect(bytes.count == 20)
        #expect(Array(bytes[0..<6]) == [0x01, 0x00, 0x00, 0x20, 0x03, 0x00])
        #expect(bytes[6..<18].allSatisfy { $0 == 0 })
        let crc = EspressifCRC16.checksum(bytes[0..<18])
        #expect(bytes[18] == UInt8(crc & 0xFF) && bytes[19] == UInt8(crc >> 8))
        #expect(EspressifCommand(decoding: Data(bytes), strict: true) == .start(length: 0x0003_2000))
    }

    @Test func stopVector() {
        // 02 00, sixteen zeros, CRC-16/XMODEM of the 18 bytes, little-endian.
        let crc = EspressifCRC16.checksum([0x02] + [UInt8](repeating: 0, count: 17))
        #expect(EspressifCommand.stop.encoded == Data([0x02] + [UInt8](repeating: 0, count: 17) + [UInt8(crc & 0xFF), UInt8(crc >> 8)]))
    }

    @Test func strictDecodingRefusesBadCRCAndLengthTheLaxOneDoesNot() {
        var bytes = [UInt8](EspressifCommand.start(length: 100).encoded)
        bytes[19] ^= 0xFF
        #expect(EspressifCommand(decoding: Data(bytes), strict: true) == nil)
        #expect(EspressifCommand(decoding: Data(bytes), strict: false) == .start(length: 100))
        #expect(EspressifCommand(decoding: Data(bytes.prefix(6)), strict: false) == .start(length: 100))
        #expect(EspressifCommand(decoding: Data(bytes.prefix(6)), strict: true) == nil)
        #expect(EspressifCommand(decoding: Data([0x09, 0, 0, 0, 0, 0]), strict: false) == nil)
    }

    @Test func commandAckVector() throws {
        let ack = EspressifCommandAck(commandID: 0x0001, status: 0x0000, window: 4)
        let bytes = [UInt8](ack.encoded)
        #expect(Array(bytes[0..<8]) == [0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00])
        #expect(bytes.count == 20)
        #expect(EspressifCommandAck(decoding: ack.encoded) == ack)
        var broken = bytes
        broken[4] = 1
        #expect(EspressifCommandAck(decoding: Data(broken)) == nil, "CRC no longer matches")
        #expect(EspressifCommandAck(decoding: Data(bytes.prefix(19))) == nil)
        #expect(EspressifCommandAck(decoding: EspressifCommand.stop.encoded) == nil, "a command is not an ACK")
        #expect(EspressifCommandAck(commandID: 2, status: 1).description == "ACK of 0x0002: rejected")
    }

    @Test func sectorAckVector() {
        let ack = EspressifSectorAck(sector: 0x0102, status: .crcError, expected: 0x0102)
        let bytes = [UInt8](ack.encoded)
        #expect(Array(bytes[0..<6]) == [0x02, 0x01, 0x01, 0x00, 0x02, 0x01])
        #expect(bytes[6..<18].allSatisfy { $0 == 0 })
        #expect(EspressifSectorAck(decoding: ack.encoded) == ack)
        #expect(EspressifSectorAck(sector: 1, status: .init(rawValue: 9), expected: 1).description == "sector 1: status 0x0009, expects sector 1")
    }

    @Test func packetHeaderIsSectorThenSequence() {
        let packet = EspressifFirmwarePacket(sector: 0x0203, sequence: 7, payload: Data([0xAA, 0xBB]))
        #expect(packet.encoded == Data([0x03, 0x02, 0x07, 0xAA, 0xBB]))
        #expect(EspressifFirmwarePacket(decoding: packet.encoded) == packet)
        #expect(EspressifFirmwarePacket(decoding: Data([1, 2])) == nil)
    }

    /// Reassembling the packets gives the sector back, the 0xFF packet ends with its CRC, and
    /// no packet exceeds the payload size, at every size where the last packet's room changes.
    @Test(arguments: [17, 20, 182, 244], [1, 2, 15, 16, 17, 18, 19, 4095, 4096])
    func sectorsCutIntoPackets(payload: Int, size: Int) throws {
        let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let packets = EspressifFirmwarePacket.packets(sector: 5, data: data, payloadSize: payload)
        #expect(packets.allSatisfy { $0.packet.payload.count <= payload && $0.packet.sector == 5 })
        #expect(packets.dropLast().map(\.packet.sequence) == (0..<(packets.count - 1)).map { UInt8($0) })
        let last = try #require(packets.last)
        #expect(last.packet.isLast)
        #expect(last.packet.payload.count >= 3, "the last packet carries data as well as the CRC")
        let crc = EspressifCRC16.checksum(data)
        #expect(Array(last.packet.payload.suffix(2)) == [UInt8(crc & 0xFF), UInt8(crc >> 8)])
        let joined = packets.dropLast().reduce(Data()) { $0 + $1.packet.payload } + last.packet.payload.dropLast(2)
        #expect(joined == data)
        #expect(packets.map(\.range.count).reduce(0, +) == size)
        #expect(packets.count <= 256)
    }

    /// The encoded writes the client sends are the packets' encodings, byte for byte, with the
    /// same ranges, also for a sector that is a slice of a larger buffer (not starting at 0); a
    /// write that differs (a wrong CRC, a byte off) fails here.
    @Test(arguments: [17, 20, 182, 241], [1, 2, 17, 18, 19, 240, 4095, 4096])
    func encodedWritesAreThePacketsEncodings(payload: Int, size: Int) {
        let buffer = Data((0..<(size + 7)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 3) })
        let data = buffer[7...]
        let packets = EspressifFirmwarePacket.packets(sector: 0x1234, data: data, payloadSize: payload)
        let writes = EspressifFirmwarePacket.writes(sector: 0x1234, data: data, payloadSize: payload)
        #expect(writes.map(\.bytes) == packets.map(\.packet.encoded))
        #expect(writes.map(\.range) == packets.map(\.range))
        #expect(writes.last.map { EspressifFirmwarePacket(decoding: $0.bytes)?.isLast } == true)
    }

    /// The in-place CRC-16 of `Data` and of raw bytes is the byte-sequence one: the catalogue's
    /// check value, and equal on a slice, on empty input and on 4 KiB of varied bytes.
    @Test func crc16OverDataIsTheSequenceCRC() {
        let check = Data("123456789".utf8)
        #expect(EspressifCRC16.checksum(check) == 0x31C3)
        #expect(check.withUnsafeBytes { EspressifCRC16.checksum($0) } == 0x31C3)
        let sector = Data((0..<4103).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ $0 >> 3) })[7...]
        #expect(EspressifCRC16.checksum(sector) == EspressifCRC16.checksum(Array(sector)))
        #expect(EspressifCRC16.checksum(Data()) == 0)
        #expect(EspressifCRC16.checksum(sector) != EspressifCRC16.checksum(sector.dropLast()))
    }

    /// Eight bytes per step and the byte-at-a-time tail agree with the table's byte loop at every
    /// length around the step (0 to 40 bytes) and at every start offset within a step.
    @Test func crc16SlicedMatchesTheByteLoopAtEveryLengthAndOffset() {
        let bytes = (0..<48).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 0x5A) }
        for start in 0..<8 {
            for length in 0...40 {
                let slice = Array(bytes[start..<(start + length)])
                let sliced = slice.withUnsafeBytes { EspressifCRC16.checksum($0) }
                #expect(sliced == EspressifCRC16.checksum(slice.lazy.map { $0 }), "start \(start), length \(length)")
            }
        }
    }

    /// The folded CRC-16 (carry-less multiplication, whole 16-byte blocks, then the table for
    /// the tail) and the table alone agree with the polynomial's bitwise definition at every
    /// length 0-600 (across the 64-byte threshold and the fold's 64- and 16-byte steps) at eight
    /// alignments, a sector's 4096 bytes, and random contents; one wrong constant in the folding
    /// fails nearly every length from 16 on.
    @Test func crc16FoldedMatchesTheBitwiseDefinitionAtEveryLengthAndAlignment() {
        var random = SeededRandom(seed: 0x1021)
        let bytes = (0..<(4096 + 8)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        var failures = 0
        for start in 0..<8 {
            for length in Array(0...600) + [1024, 4095, 4096] {
                let piece = Array(bytes[start..<(start + length)])
                let expected = Self.bitwiseCRC16(piece)
                let folded = piece.withUnsafeBytes { EspressifCRC16.checksum($0) }
                let sliced = piece.withUnsafeBytes { EspressifCRC16.sliced($0) }
                if folded != expected || sliced != expected { failures += 1 }
                #expect(folded == expected, "folded, start \(start), length \(length)")
                #expect(sliced == expected, "table, start \(start), length \(length)")
                if failures > 20 { return }
            }
        }
    }

    /// Where this machine folds, the test above went through the folding; where it does not
    /// (another architecture, an x86-64 CPU without PCLMULQDQ), through the table alone.
    @Test func crc16FoldingIsUsedWhereTheCPUHasIt() {
        #if arch(x86_64)
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        if cpu.contains(" pclmulqdq") && cpu.contains(" sse4_1") { #expect(EspressifCRC16.foldingAvailable) }
        #else
        #expect(!EspressifCRC16.foldingAvailable)
        #endif
    }

    /// CRC-16/XMODEM one bit at a time, from its definition: polynomial 0x1021, MSB first,
    /// register from 0, no final XOR.
    static func bitwiseCRC16(_ bytes: [UInt8]) -> UInt16 {
        var register: UInt16 = 0
        for byte in bytes {
            register ^= UInt16(byte) << 8
            for _ in 0..<8 { register = register & 0x8000 != 0 ? (register << 1) ^ 0x1021 : register << 1 }
        }
        return register
    }

    @Test func aFullSectorAtMTU23Takes242Packets() {
        let packets = EspressifFirmwarePacket.packets(sector: 0, data: Data(count: 4096), payloadSize: 17)
        #expect(packets.count == 242)
        #expect(packets[240].packet.sequence == 240)
        #expect(packets[240].packet.payload.count == 15)
        #expect(packets[241].packet.payload.count == 3)
    }
}
