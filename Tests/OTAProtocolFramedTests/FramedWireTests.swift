import Foundation
import OTACore
import Testing

@testable import OTAProtocolFramed

@Suite struct FramedWireTests {
    private func hex(_ data: Data) -> String {
        data.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined()
    }

    @Test func beginMatchesTheWorkedExample() {
        let begin = FramedCommand.begin(SessionIdentity(size: 1000, crc: 0x1234_5678, version: 7), batch: 4, version: 1)
        #expect(hex(begin.encoded) == "1001E803000078563412070000000400")
        #expect(FramedCommand.decode(begin.encoded)?.command == begin)
        let compact = FramedCommand.begin(SessionIdentity(size: 1000, crc: 0x1234_5678, version: 7), batch: 4)
        #expect(hex(compact.encoded) == "1002E803000078563412070000000400")
        #expect(FramedCommand.decode(compact.encoded)?.version == 2)
        #expect(hex(FramedCommand.commit.encoded) == "11")
        #expect(hex(FramedCommand.abort.encoded) == "12")
    }

    /// Version 2 chunks as the spec's worked example shows them: the tag, the payload, and after
    /// a batch's last payload the CRC-32 of the image prefix.
    @Test func compactChunksMatchTheSpec() {
        let plain = FramedChunk.encodeCompact(sequence: 3, payload: Data([0xAA, 0xBB]), batchCRC: nil)
        #expect(hex(plain) == "0300AABB")
        let end = FramedChunk.encodeCompact(sequence: 0x8003, payload: Data([0xCC]), batchCRC: 0x0D4A_1185)
        #expect(hex(end) == "0380CC85114A0D")  // sequence taken modulo 2^15, batch-end bit set
        #expect(FramedChunk.decodeCompact(plain) == FramedChunk.Compact(sequence: 3, payload: Data([0xAA, 0xBB]), batchCRC: nil))
        #expect(FramedChunk.decodeCompact(end) == FramedChunk.Compact(sequence: 3, payload: Data([0xCC]), batchCRC: 0x0D4A_1185))
        #expect(FramedChunk.decodeCompact(Data([0x03, 0x00])) == nil)  // no payload
        #expect(FramedChunk.decodeCompact(Data([0x03, 0x80, 1, 2, 3, 4])) == nil)  // a check but no payload
        // Version 1 as before, built without per-byte appends.
        #expect(hex(FramedChunk.encode(offset: 0x0C, payload: Data("hello world".utf8))) == "0C00000085114A0D68656C6C6F20776F726C64")
    }

    @Test(arguments: [[0x10], [0x10, 1, 0, 0], [0x11, 0], [0x13], []] as [[UInt8]])
    func malformedCommandsDoNotDecode(bytes: [UInt8]) {
        #expect(FramedCommand.decode(Data(bytes)) == nil)
    }

    @Test func notificationsRoundTrip() {
        let all: [FramedNotification] = [
            .beginReply(.ok, state: .receiving, offset: 96, batch: 4),
            .commitReply(.crcMismatch),
            .abortReply(.ok),
            .ack(offset: 48, runningCRC: 0xDEAD_BEEF),
            .nak(.gap, offset: 96, runningCRC: 1),
        ]
        for notification in all {
            #expect(FramedNotification(decoding: notification.encoded) == notification)
        }
        #expect(hex(FramedNotification.beginReply(.ok, state: .receiving, offset: 96, batch: 4).encoded) == "900001600000000400")
        #expect(FramedNotification(decoding: Data([0xA0, 1, 2, 3])) == nil)
        #expect(FramedNotification(decoding: Data([0x90, 0, 9, 0, 0, 0, 0, 1, 0])) == nil)  // unknown state
    }

    @Test func chunkCarriesOffsetAndPayloadCRC() throws {
        let chunk = FramedChunk.encode(offset: 0x0102_0304, payload: Data("hello world".utf8))
        #expect(hex(chunk.prefix(8)) == "04030201" + "85114A0D")
        let decoded = try #require(FramedChunk.decode(chunk))
        #expect(decoded.offset == 0x0102_0304 && decoded.crc == 0x0D4A_1185 && decoded.payload == Data("hello world".utf8))
        #expect(FramedChunk.decode(Data(count: 8)) == nil)
    }

    @Test func statusRoundTrips() throws {
        let status = FramedDeviceStatus(
            state: .receiving, offset: 96, runningCRC: 7, identity: SessionIdentity(size: 1000, crc: 0x1234_5678, version: 7), maximumBatch: 16
        )
        #expect(status.encoded.count == 24)
        #expect(FramedDeviceStatus(decoding: status.encoded) == status)
        #expect(FramedDeviceStatus(decoding: status.encoded.prefix(23)) == nil)
    }
}
