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

/// The storage follows what was written, and reads the same as a fully allocated slot would.
@Suite struct NORFlashStorageTests {
    @Test func memoryFollowsWhatWasWrittenNotTheSlot() throws {
        let flash = NORFlash(capacity: 12 << 20)
        #expect(flash.residentBytes == 0)
        #expect(flash.read(0..<4) == Data([0xFF, 0xFF, 0xFF, 0xFF]))
        let image = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for offset in stride(from: 0, to: image.count, by: 244) {
            try flash.write(image[offset..<min(offset + 244, image.count)], at: offset)
        }
        #expect(flash.residentBytes == 200_704)  // 49 sectors
        #expect(flash.read(0..<image.count) == image)
        #expect(flash.read(image.count..<image.count + 8) == Data(repeating: 0xFF, count: 8))
        #expect(flash.read((12 << 20) - 2..<(12 << 20) + 2) == Data([0xFF, 0xFF]))
        #expect(flash.snapshot().count == 12 << 20)
    }

    @Test func readsAndErasesAcrossTheKeptEdgeBehaveAsAFullSlot() throws {
        let reference = ReferenceFlash(capacity: 64 * 1024)
        let flash = NORFlash(capacity: 64 * 1024)
        var random = LinearCongruential(state: 42)
        for _ in 0..<250 {
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                let offset = Int.random(in: 0..<(64 * 1024 - 300), using: &random)
                let data = Data((0..<Int.random(in: 0..<300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
                try flash.write(data, at: offset)
                reference.write(data, at: offset)
            case 1:
                let start = Int.random(in: 0..<(64 * 1024), using: &random)
                let range = start..<min(64 * 1024, start + Int.random(in: 0..<9000, using: &random))
                try flash.erase(range)
                reference.erase(flash.sectors(covering: range))
            default:
                let start = Int.random(in: -100..<(64 * 1024 + 100), using: &random)
                let range = start..<start + Int.random(in: 0..<5000, using: &random)
                #expect(flash.read(range) == reference.read(range))
            }
        }
        #expect(flash.snapshot() == reference.read(0..<64 * 1024))
        let restored = NORFlash(capacity: 64 * 1024)
        try restored.restore(flash.snapshot())
        #expect(restored.snapshot() == flash.snapshot())
        #expect(restored.residentBytes <= flash.residentBytes)
    }

    /// A fixed sequence, so a failure repeats.
    struct LinearCongruential: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state ^ state >> 29
        }
    }

    /// The obvious model: every byte allocated, byte by byte.
    final class ReferenceFlash {
        var bytes: [UInt8]
        init(capacity: Int) { bytes = [UInt8](repeating: 0xFF, count: capacity) }
        func write(_ data: Data, at offset: Int) { for (index, byte) in data.enumerated() { bytes[offset + index] &= byte } }
        func erase(_ range: Range<Int>) { for index in range { bytes[index] = 0xFF } }
        func read(_ range: Range<Int>) -> Data { Data(bytes[range.clamped(to: 0..<bytes.count)]) }
    }
}
