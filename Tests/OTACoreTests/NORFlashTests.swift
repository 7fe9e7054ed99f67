import Foundation
import OTACore
import Testing

/// The one NOR flash model, served by the BlueZ peripheral and wrapped by the simulator.
@Suite struct NORFlashTests {
    @Test func behavesLikeNOR() throws {
        let flash = NORFlash(capacity: 16384)
        #expect(flash.sectorSize == 4096)
        #expect(flash.read(0..<4) == Data([0xFF, 0xFF, 0xFF, 0xFF]))
        try flash.write(Data([0x0F, 0xF0]), at: 4095)
        try flash.write(Data([0xF3, 0x3F]), at: 4095)  // programming ANDs
        #expect(flash.read(4095..<4097) == Data([0x03, 0x30]))
        try flash.erase(4096..<4097)  // the whole second sector, not the first
        #expect(flash.read(4095..<4097) == Data([0x03, 0xFF]))
        #expect(flash.snapshot().count == 16384)
    }

    @Test func erasesAndWritesOutsideTheSlotThrowAndChangeNothing() throws {
        let flash = NORFlash(capacity: 8192)
        try flash.write(Data([0x00]), at: 8191)
        #expect(throws: FlashError("write of 2 bytes at 0x1fff is outside the 8192-byte slot")) {
            try flash.write(Data([0x00, 0x00]), at: 8191)
        }
        #expect(throws: FlashError.self) { try flash.write(Data([0]), at: -1) }
        #expect(throws: FlashError("erase of 0x1000..<0x2001 is outside the 8192-byte slot")) {
            try flash.erase(4096..<8193)
        }
        #expect(flash.read(8191..<8192) == Data([0x00]))
        try flash.erase(5000..<5000)  // empty: nothing
        #expect(flash.read(8191..<8192) == Data([0x00]))
    }

    /// Reads are clamped: the part inside the slot is returned, so a device model answering a bad
    /// offset from a client sees a short (or empty) read instead of crashing the host.
    @Test func readsOutsideTheSlotAreClamped() throws {
        let flash = NORFlash(capacity: 4096, sectorSize: 1024)
        try flash.write(Data([0x01, 0x02]), at: 4094)
        #expect(flash.read(4094..<4200) == Data([0x01, 0x02]))
        #expect(flash.read(5000..<5010).isEmpty)
        #expect(flash.read(-2..<1) == Data([0xFF]))
    }

    @Test func snapshotsRestoreOnlyIntoTheSameSize() throws {
        let flash = NORFlash(capacity: 4096)
        try flash.write(Data([0xAB]), at: 7)
        let copy = NORFlash(capacity: 4096)
        try copy.restore(flash.snapshot())
        #expect(copy.read(7..<8) == Data([0xAB]))
        #expect(throws: FlashError("a 10-byte snapshot does not fit a 4096-byte slot")) { try copy.restore(Data(count: 10)) }
    }
}
