import Foundation
import OTACore
import Testing

@testable import OTATransportSimulator

@Suite struct SimulatedFlashTests {
    private let timing = FlashTiming(sectorSize: 4096, sectorEraseTime: .milliseconds(45), writeBytesPerSecond: 400_000)

    @Test func erasedFlashReadsFFAndProgrammingANDsBits() throws {
        let flash = SimulatedFlash(capacity: 8192, timing: timing)
        #expect(flash.read(0..<4) == Data([0xFF, 0xFF, 0xFF, 0xFF]))
        try flash.write(Data([0xF0, 0x0F]), at: 0)
        try flash.write(Data([0x3C, 0x3C]), at: 0)
        #expect(flash.read(0..<2) == Data([0x30, 0x0C]))
        try flash.erase(0..<1)
        #expect(flash.read(0..<2) == Data([0xFF, 0xFF]))
    }

    @Test func outOfRangeAndInjectedFailuresThrow() throws {
        let flash = SimulatedFlash(capacity: 4096, timing: timing)
        #expect(throws: FlashError.self) { try flash.write(Data(count: 2), at: 4095) }
        #expect(throws: FlashError.self) { try flash.erase(0..<5000) }
        flash.injectFailure("program failure")
        #expect(throws: FlashError("program failure")) { try flash.write(Data(count: 1), at: 0) }
        flash.injectFailure(nil)
        try flash.write(Data(count: 1), at: 0)
    }

    @Test func readsAreClampedToTheSlotLikeEveryOtherHost() throws {
        let flash = SimulatedFlash(capacity: 4096, timing: timing)
        try flash.write(Data([0x12]), at: 4095)
        #expect(flash.read(4094..<4100) == Data([0xFF, 0x12]))
        #expect(flash.read(5000..<5004).isEmpty)
        #expect(flash.settle(at: .zero) == timing.writeTime(1))
    }

    @Test func anEmptyEraseCostsNothing() throws {
        let flash = SimulatedFlash(capacity: 8192, timing: timing)
        try flash.erase(100..<100)
        #expect(flash.settle(at: .zero) == .zero)
        try flash.erase(4095..<4097)
        #expect(flash.settle(at: .zero) == timing.sectorEraseTime * 2)
    }

    /// The device's busy time is kept with the flash's cost: work queues behind work still
    /// running, starts at once on an idle device, and a restart forgets what was queued.
    @Test func settlingQueuesFlashWorkBehindTheDevicesBacklog() throws {
        let flash = SimulatedFlash(capacity: 8192, timing: timing)
        let write = timing.writeTime(100)
        try flash.write(Data(count: 100), at: 0)
        #expect(flash.settle(at: .milliseconds(1)) == .milliseconds(1) + write)
        try flash.write(Data(count: 100), at: 100)
        #expect(flash.settle(at: .milliseconds(1)) == .milliseconds(1) + write * 2)  // still busy: queued
        #expect(flash.settle(at: .seconds(5)) == .seconds(5))  // idle, nothing new
        try flash.write(Data(count: 100), at: 200)
        flash.resetBusy(to: .seconds(6))
        #expect(flash.settle(at: .seconds(6)) == .seconds(6) + write)  // unfolded work still counts
    }

    /// A write from raw bytes is the same write: the same contents, time, byte count and changed
    /// sectors as a `Data` write, the same range check and injected failure, each leaving the
    /// flash as it was.
    @Test func aRawWriteIsAccountedAsADataWrite() throws {
        let raw = SimulatedFlash(capacity: 4096 * 4, timing: timing)
        let data = SimulatedFlash(capacity: 4096 * 4, timing: timing)
        let writes: [(Data, Int)] = [(Data(0..<244), 100), (Data(repeating: 0x5A, count: 300), 4000), (Data([0x0F]), 100), (Data(), 9000)]
        for (bytes, offset) in writes {
            try bytes.withUnsafeBytes { try raw.write($0, at: offset) }
            try data.write(bytes, at: offset)
        }
        #expect(raw.snapshot() == data.snapshot())
        #expect(raw.bytesWritten == data.bytesWritten)
        #expect(raw.bytesWritten == 545)
        #expect(raw.takeChangedSectors() == [0, 1])
        #expect(data.takeChangedSectors() == [0, 1])
        let busy = raw.settle(at: .zero)
        #expect(busy == data.settle(at: .zero))
        #expect(busy == timing.writeTime(244) + timing.writeTime(300) + timing.writeTime(1))

        #expect(throws: FlashError.self) { try Data(count: 2).withUnsafeBytes { try raw.write($0, at: 4096 * 4 - 1) } }
        raw.injectFailure("program failure")
        #expect(throws: FlashError("program failure")) { try Data(count: 1).withUnsafeBytes { try raw.write($0, at: 0) } }
        #expect(raw.snapshot() == data.snapshot())
        #expect(raw.bytesWritten == 545)
        #expect(raw.takeChangedSectors() == [])
        #expect(raw.settle(at: .zero) == busy)  // nothing queued behind it
    }

    /// Changed sectors come back sorted and once, whatever order they were touched in, and a
    /// restore forgets them.
    @Test func changedSectorsAreReportedOnceInOrder() throws {
        let flash = SimulatedFlash(capacity: 4096 * 130, timing: timing)
        try flash.write(Data(count: 10), at: 4096 * 129 + 5)
        try flash.erase(4096 * 64..<4096 * 66)
        try flash.write(Data(count: 4098), at: 4095)  // sectors 0, 1 and 2
        try flash.write(Data(count: 1), at: 4096 * 63)
        #expect(flash.takeChangedSectors() == [0, 1, 2, 63, 64, 65, 129])
        #expect(flash.takeChangedSectors() == [])
        try flash.write(Data(count: 1), at: 4096 * 127)
        try flash.restore(flash.snapshot())
        #expect(flash.takeChangedSectors() == [])
    }

    /// The changed sectors are the ones each write and erase touched, whether the sector size is
    /// a power of two (found by a shift) or not (by a division), and a sector written again after
    /// they were taken is reported again (a write into a sector still marked changes nothing).
    @Test(arguments: [4096, 1000, 512, 3])
    func changedSectorsAreTheOnesTouchedForAnySectorSize(sectorSize: Int) throws {
        let timing = FlashTiming(sectorSize: sectorSize, sectorEraseTime: .milliseconds(1), writeBytesPerSecond: 400_000)
        let capacity = sectorSize * 200
        let flash = SimulatedFlash(capacity: capacity, timing: timing)
        var random = SeededRandom(seed: UInt64(sectorSize))
        for _ in 0..<6 {
            var expected = Set<Int>()
            for _ in 0..<40 {
                let offset = Int.random(in: 0..<capacity, using: &random)
                let count = Int.random(in: 1...min(3 * sectorSize, capacity - offset), using: &random)
                if Bool.random(using: &random) {
                    try flash.write(Data(repeating: 0x5A, count: count), at: offset)
                } else {
                    try flash.erase(offset..<(offset + count))
                }
                expected.formUnion(offset / sectorSize...(offset + count - 1) / sectorSize)
            }
            #expect(flash.takeChangedSectors() == expected.sorted())
        }
        // A stream of small writes through one sector, taken in the middle: the rest of them
        // still mark it.
        try flash.write(Data(count: 1), at: sectorSize * 7)
        #expect(flash.takeChangedSectors() == [7])
        try flash.write(Data(count: 1), at: sectorSize * 7 + min(1, sectorSize - 1))
        #expect(flash.takeChangedSectors() == [7])
    }

    /// Only the programmed sectors are visited, in order, each whole (its unwritten bytes
    /// `0xFF`): a sector erased after its write is not, nor is any sector of an unwritten block.
    @Test func programmedSectorsAreVisitedInOrderAndNothingElse() throws {
        let flash = SimulatedFlash(capacity: 4096 * 3072, timing: timing)  // a 12 MiB slot
        try flash.write(Data([0x12, 0x34]), at: 4096 * 2000 + 10)
        try flash.write(Data(repeating: 0xA5, count: 4096), at: 4096 * 9)
        try flash.write(Data([0x00]), at: 4096 * 8)
        try flash.erase(4096 * 8..<4096 * 9)
        try flash.write(Data([0x77]), at: 4096 * 3071 + 4095)
        var visited: [(Int, Data)] = []
        flash.forEachProgrammedSector { visited.append(($0, Data($1))) }
        #expect(visited.map(\.0) == [9, 2000, 3071])
        for (index, bytes) in visited { #expect(bytes == flash.read((index * 4096)..<((index + 1) * 4096)), "sector \(index)") }
    }

    /// A restore from sectors leaves the flash a restore from the slot image holding them
    /// leaves, byte for byte and in what it keeps (a sector of nothing but `0xFF` is not kept);
    /// a sector outside the slot or of another size is refused, the flash as it was.
    @Test func aRestoreFromSectorsIsTheRestoreOfTheirSlotImage() throws {
        var random = SeededRandom(seed: 7)
        for round in 0..<20 {
            var sectors: [Int: Data] = [:]
            for _ in 0..<Int(random.next() % 6) {
                let index = Int(random.next() % 40)
                switch random.next() % 3 {
                case 0: sectors[index] = Data(repeating: 0xFF, count: 4096)
                case 1: sectors[index] = Data((0..<4096).map { _ in UInt8(truncatingIfNeeded: random.next()) })
                default: sectors[index] = Data(repeating: 0xFF, count: 4095) + Data([0x7F])
                }
            }
            var image = Data(repeating: 0xFF, count: 4096 * 40)
            for (index, bytes) in sectors { image.replaceSubrange((index * 4096)..<((index + 1) * 4096), with: bytes) }
            let fromSectors = SimulatedFlash(capacity: 4096 * 40, timing: timing)
            let fromImage = SimulatedFlash(capacity: 4096 * 40, timing: timing)
            try fromSectors.write(Data([0]), at: 4096 * 39)  // replaced, not kept
            try fromSectors.restore(sectors: sectors)
            try fromImage.restore(image)
            #expect(fromSectors.snapshot() == image, "round \(round)")
            var kept: [[Int]] = [[], []]
            fromSectors.forEachProgrammedSector { index, _ in kept[0].append(index) }
            fromImage.forEachProgrammedSector { index, _ in kept[1].append(index) }
            #expect(kept[0] == kept[1], "round \(round)")
            #expect(fromSectors.takeChangedSectors() == [])
        }
        let flash = SimulatedFlash(capacity: 4096 * 4, timing: timing)
        try flash.write(Data([0x42]), at: 0)
        for bad in [[4: Data(count: 4096)], [-1: Data(count: 4096)], [1: Data(count: 4095)]] {
            #expect(throws: FlashError.self) { try flash.restore(sectors: bad) }
        }
        #expect(flash.read(0..<1) == Data([0x42]))
    }
}
