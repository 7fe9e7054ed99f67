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
        #expect(flash.residentBytes == 229_376)  // 49 sectors, in 7 blocks of 8
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

    /// Blocks hold several sectors (or one, when a sector is larger than a block): writes,
    /// erases and reads across sector and block edges, with any sector size, read as a full
    /// slot does; a block is given back once its last sector is erased, and not before.
    @Test(arguments: [1024, 3000, 4096, 40960])
    func blocksOfAnySectorSizeBehaveAsAFullSlot(sectorSize: Int) throws {
        let capacity = sectorSize * 40
        let reference = ReferenceFlash(capacity: capacity)
        let flash = NORFlash(capacity: capacity, sectorSize: sectorSize)
        let perBlock = max(1, 32 * 1024 / sectorSize)
        var random = LinearCongruential(state: UInt64(sectorSize))
        for _ in 0..<400 {
            switch Int.random(in: 0..<4, using: &random) {
            case 0, 1:
                let count = Int.random(in: 0..<(2 * sectorSize), using: &random)
                let offset = Int.random(in: 0...(capacity - count), using: &random)
                let data = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) })
                try flash.write(data, at: offset)
                reference.write(data, at: offset)
            case 2:
                let start = Int.random(in: 0..<capacity, using: &random)
                let range = start..<min(capacity, start + Int.random(in: 0..<(3 * sectorSize), using: &random))
                try flash.erase(range)
                reference.erase(flash.sectors(covering: range))
            default:
                let start = Int.random(in: -100..<(capacity + 100), using: &random)
                let range = start..<start + Int.random(in: 0..<(2 * sectorSize), using: &random)
                #expect(flash.read(range) == reference.read(range))
            }
            // Resident: whole blocks, at most one per sector that holds a programmed byte.
            #expect(flash.residentBytes % (perBlock * sectorSize) == 0)
        }
        #expect(flash.snapshot() == reference.read(0..<capacity))

        // One sector left in a block keeps the block; erasing it gives the block back.
        try flash.erase(0..<capacity)
        #expect(flash.residentBytes == 0)
        try flash.write(Data([0x00]), at: 0)
        try flash.write(Data([0x00]), at: capacity - 1)
        #expect(flash.residentBytes == 2 * perBlock * sectorSize)  // the first block and the last
        try flash.erase(0..<1)
        #expect(flash.residentBytes == perBlock * sectorSize)
        #expect(flash.read(capacity - 1..<capacity) == Data([0x00]))
        try flash.erase(capacity - 1..<capacity)
        #expect(flash.residentBytes == 0)
        #expect(flash.snapshot() == Data(repeating: 0xFF, count: capacity))
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

    /// Programming works eight bytes at a time with a byte-wise tail: writes at odd offsets and
    /// lengths, across sector edges and over programmed bytes, must store exactly what a
    /// byte-by-byte AND into an all-0xFF slot stores.
    @Test func bulkProgrammingMatchesByteByByteNOR() throws {
        let flash = NORFlash(capacity: 8192, sectorSize: 1024)
        var reference = [UInt8](repeating: 0xFF, count: 8192)
        var seed: UInt64 = 7
        func next() -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: seed >> 33)
        }
        for _ in 0..<300 {
            let offset = next() % 8000
            let count = 1 + next() % min(191, 8192 - offset)
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
            try flash.write(Data(bytes), at: offset)
            for index in 0..<count { reference[offset + index] &= bytes[index] }
            if next() % 25 == 0 {
                let sector = next() % 8
                try flash.erase(sector * 1024..<(sector * 1024 + 1))
                for index in (sector * 1024)..<((sector + 1) * 1024) { reference[index] = 0xFF }
            }
        }
        #expect(flash.snapshot() == Data(reference))
        // A slice handed in (not starting at index 0) is programmed from its own start.
        let slice = Data([0xAA, 0x00, 0x0F, 0xF0, 0x55])[2...]
        try flash.erase(0..<1)
        try flash.write(slice, at: 1021)
        #expect(flash.read(1020..<1025) == Data([0xFF, 0x0F, 0xF0, 0x55, 0xFF]))
    }

    /// A write from raw bytes (a model that holds a packet's bytes already) stores exactly what a
    /// `Data` write of the same bytes stores, through the protocol as a model calls it: one sector,
    /// across sector edges, over programmed bytes, empty; outside the slot it throws and changes
    /// nothing.
    @Test func rawWritesProgramWhatDataWritesProgram() throws {
        let raw: any FlashStorage = NORFlash(capacity: 8192, sectorSize: 1024)
        let data: any FlashStorage = NORFlash(capacity: 8192, sectorSize: 1024)
        var random = LinearCongruential(state: 11)
        for round in 0..<300 {
            let offset = Int.random(in: 0..<8000, using: &random)
            let count = round % 50 == 0 ? 0 : Int.random(in: 1...min(700, 8192 - offset), using: &random)
            let bytes = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) })
            try bytes.withUnsafeBytes { try raw.write($0, at: offset) }
            try data.write(bytes, at: offset)
            if round % 40 == 39 {
                let sector = Int.random(in: 0..<8, using: &random)
                try raw.erase(sector * 1024..<(sector * 1024 + 1))
                try data.erase(sector * 1024..<(sector * 1024 + 1))
            }
        }
        #expect(raw.read(0..<8192) == data.read(0..<8192))
        #expect(raw.read(0..<8192) != Data(repeating: 0xFF, count: 8192))
        let before = raw.read(0..<8192)
        #expect(throws: FlashError.self) { try Data(count: 10).withUnsafeBytes { try raw.write($0, at: 8190) } }
        #expect(throws: FlashError.self) { try Data(count: 1).withUnsafeBytes { try raw.write($0, at: -1) } }
        #expect(raw.read(0..<8192) == before)
    }

    /// A host's flash that implements only the `Data` write gets the raw one from the protocol:
    /// the same bytes, at the same offset, and its error passed on.
    @Test func aFlashWithoutItsOwnRawWriteIsHandedTheBytesAsData() throws {
        final class Recording: FlashStorage, @unchecked Sendable {
            let capacity = 64
            let sectorSize = 16
            var writes: [(Data, Int)] = []
            func erase(_ range: Range<Int>) throws(FlashError) {}
            func write(_ bytes: Data, at offset: Int) throws(FlashError) {
                guard offset + bytes.count <= capacity else { throw FlashError("past the end") }
                writes.append((bytes, offset))
            }
            func read(_ range: Range<Int>) -> Data { Data() }
        }
        let recording = Recording()
        let flash: any FlashStorage = recording
        let bytes = Data([1, 2, 3, 4, 5])
        try bytes[1...].withUnsafeBytes { try flash.write($0, at: 7) }
        #expect(recording.writes.count == 1)
        #expect(recording.writes.first?.0 == Data([2, 3, 4, 5]))
        #expect(recording.writes.first?.1 == 7)
        #expect(throws: FlashError("past the end")) { try bytes.withUnsafeBytes { try flash.write($0, at: 62) } }
    }

    /// Bytes past the last one programmed in a sector are copied rather than ANDed: a stream of
    /// writes, then writes over it (before and after an erase, and after a restore, which keeps
    /// no such mark) must still AND.
    @Test func programmingPastTheWrittenPartCopiesAndOverItANDs() throws {
        let flash = NORFlash(capacity: 8192, sectorSize: 4096)
        try flash.write(Data([0xF0, 0xF0, 0xF0]), at: 10)
        try flash.write(Data([0x3C, 0x3C]), at: 13)  // after the written part: a copy
        try flash.write(Data([0x0F, 0xFF]), at: 11)  // over it: an AND
        try flash.write(Data([0x55]), at: 5)  // before it, never written: erased, so the same as a copy
        #expect(flash.read(4..<16) == Data([0xFF, 0x55, 0xFF, 0xFF, 0xFF, 0xFF, 0xF0, 0x00, 0xF0, 0x3C, 0x3C, 0xFF]))
        let restored = NORFlash(capacity: 8192, sectorSize: 4096)
        try restored.restore(flash.snapshot())
        try restored.write(Data([0x0F]), at: 14)
        #expect(restored.read(13..<16) == Data([0x3C, 0x0C, 0xFF]))
        try restored.erase(0..<1)
        try restored.write(Data([0x12]), at: 14)
        #expect(restored.read(13..<16) == Data([0xFF, 0x12, 0xFF]))
    }

    /// A sector is allocated when first written, not filled with 0xFF first: the bytes before,
    /// between and after the written ones must read as erased, through a read, through pieces
    /// (which fill the sector), and when programmed over afterwards.
    @Test func untouchedBytesOfAKeptSectorReadErased() throws {
        let flash = NORFlash(capacity: 4096, sectorSize: 1024)
        var reference = [UInt8](repeating: 0xFF, count: 4096)
        func write(_ bytes: [UInt8], at offset: Int) throws {
            try flash.write(Data(bytes), at: offset)
            for (index, byte) in bytes.enumerated() { reference[offset + index] &= byte }
        }
        func check(_ step: String) {
            #expect(flash.read(0..<4096) == Data(reference), "read after \(step)")
            #expect(flash.read(450..<560) == Data(reference[450..<560]), "part after \(step)")
            var joined = Data()
            flash.forEachPiece(of: 0..<4096) { joined.append(contentsOf: $0) }
            #expect(joined == Data(reference), "pieces after \(step)")
        }
        try write([0x12, 0x34], at: 500)  // the middle of a fresh sector
        #expect(flash.read(498..<503) == Data([0xFF, 0xFF, 0x12, 0x34, 0xFF]))
        try write([0x0F, 0xF0], at: 100)  // before the written part
        try write([0x3C], at: 1000)  // past it, with a gap
        check("three writes")
        try write([0xF3, 0x3F], at: 100)  // over programmed bytes, after the pieces filled the sector
        try write([0x55], at: 1001)  // past the written part, over filled bytes
        try write([0x00], at: 2047)  // the last byte of a fresh sector
        check("writes after pieces")
        try flash.erase(0..<1)
        for index in 0..<1024 { reference[index] = 0xFF }
        try write([0x77], at: 1023)
        check("an erase and a write")
    }

    /// Commits hash the image where it lies: the pieces, erased sectors included, are exactly what
    /// a read returns, clamped the same way, and so are the CRC-32 and SHA-256 taken over them.
    @Test func piecesAreWhatAReadReturns() throws {
        let flash = NORFlash(capacity: 4096 * 4)
        try flash.write(Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) }), at: 100)
        try flash.write(Data([0x12, 0x34]), at: 4096 * 3 + 10)  // a kept sector after an erased one
        for range in [0..<16384, 99..<101, 4000..<9000, 8190..<12300, 16380..<16400, 20000..<20010, 5..<5] {
            var joined = Data()
            var pieces = 0
            flash.forEachPiece(of: range) {
                joined.append(contentsOf: $0)
                pieces += 1
            }
            #expect(joined == flash.read(range), "range \(range)")
            #expect(pieces <= (range.count + 4095) / 4096 + 1)
            #expect(flash.crc32(of: range) == CRC32.checksum(flash.read(range)))
            #expect(flash.sha256(of: range) == SHA256.hash(flash.read(range)))
        }
        // The default for other hosts' flash reads 64 KiB windows and visits the same bytes.
        let big = NORFlash(capacity: 4096 * 50)
        try big.write(Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 * 13 + 1) }), at: 3)
        let plain = ReadOnlyFlash(big)
        #expect(plain.crc32(of: 1..<204_800) == CRC32.checksum(big.read(1..<204_800)))
        #expect(plain.sha256(of: 70_000..<300_000) == SHA256.hash(big.read(70_000..<204_800)))
    }
}

/// A flash that only reads (the protocol's default ``FlashStorage/forEachPiece(of:_:)``).
private final class ReadOnlyFlash: FlashStorage, Sendable {
    let base: NORFlash
    init(_ base: NORFlash) { self.base = base }
    var capacity: Int { base.capacity }
    var sectorSize: Int { base.sectorSize }
    func erase(_ range: Range<Int>) throws(FlashError) { throw FlashError("read-only") }
    func write(_ bytes: Data, at offset: Int) throws(FlashError) { throw FlashError("read-only") }
    func read(_ range: Range<Int>) -> Data { base.read(range) }
}
