import Foundation
import Testing

@testable import OTACore

/// The shared little-endian reader and writer: round trips, and reads past the end that fail
/// softly instead of trapping.
@Suite struct ByteReaderTests {
    @Test("what ByteWriter writes, ByteReader reads back, byte runs included")
    func roundTrip() throws {
        var writer = ByteWriter()
        writer.u8(7)
        writer.u16(0xBEEF)
        writer.u32(0xDEAD_BEEF)
        writer.bytes(Data("run".utf8))
        writer.bytes([1, 2])
        var reader = ByteReader(writer.data)
        #expect(reader.u8() == 7)
        #expect(reader.u16() == 0xBEEF)
        #expect(reader.u32() == 0xDEAD_BEEF)
        #expect(reader.bytes(3) == Data("run".utf8))
        #expect(reader.bytes(0) == Data())
        #expect(reader.rest() == Data([1, 2]))
        #expect(reader.remaining == 0)
    }

    @Test("a byte run longer than what is left, or negative, is nil and reads nothing")
    func shortRuns() {
        var reader = ByteReader(Data([1, 2, 3]))
        #expect(reader.bytes(4) == nil)
        #expect(reader.bytes(-1) == nil)
        #expect(reader.position == 0)
        #expect(reader.bytes(3) == Data([1, 2, 3]))
        #expect(reader.u8() == nil)
    }
}
