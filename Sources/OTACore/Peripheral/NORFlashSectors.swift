import Foundation

/// The contents of a NOR flash slot, without a lock: the sectors programmed since their last
/// erase, held in blocks allocated when first written, and every other sector read as erased
/// (`0xFF`).
///
/// ``NORFlash`` keeps one behind its lock; the simulator's flash keeps one beside its timing and
/// counters behind a single lock, so that a write takes one lock, not two. Writes and erases work
/// in bulk. A new sector is not filled with `0xFF` first: its bytes past the ones written are
/// read as erased, and filled only when a caller needs them in memory
/// (``forEachPiece(of:_:)``).
///
/// Memory is taken in blocks of ``blockSize`` bytes (whole sectors), each with its sectors' state
/// in front, and given back when every sector in it is erased: a stream of writes allocates one
/// block per eight 4 KiB sectors, and letting the slot go frees a 12 MiB image in 384 blocks
/// rather than 3,072 sectors and their objects (decision 0078).
///
/// Not a value: a copy shares the contents with the original. Each flash keeps exactly one, used
/// behind its lock.
///
/// Its methods assume the ranges were checked (``checkErase(_:capacity:)``,
/// ``checkWrite(count:at:capacity:)``)
/// and, for reads, clamped to the slot.
package struct NORFlashSectors: Sendable {
    package let capacity: Int
    package let sectorSize: Int
    /// The blocks, shared by copies of this value (see above).
    private let blocks: Blocks
    /// The sector written last (its index, -1 for none): a stream of writes goes to one sector
    /// at a time, so most writes find theirs without a lookup. Points into its block, which
    /// stays allocated while the sector is kept (an erase that forgets it clears it here first).
    private var recentIndex = -1
    private var recentSector: Sector?

    /// The bytes of a block's memory, at most, that hold sectors (a sector larger than this takes
    /// a block of its own).
    package static let blockSize = 32 * 1024

    /// One kept sector's state, in front of its block's bytes.
    private struct SectorState {
        /// Every byte from here on is erased (`0xFF`) and was not programmed since: programming
        /// there is a copy, not an AND (a stream of writes always lands there). -1: the sector is
        /// not kept (erased; it reads `0xFF` whatever its bytes hold).
        var erasedFrom: Int
        /// The bytes before this are in memory; the ones from `erasedFrom` up to it are `0xFF`,
        /// the ones after it were never touched and read as `0xFF`. At least `erasedFrom`.
        var initialized: Int
    }

    /// A block's layout: how many kept sectors it holds, each sector's state, then the sectors'
    /// bytes.
    private struct Layout {
        let sectorSize: Int
        let sectorsPerBlock: Int
        /// Where the sectors' bytes start (after the count and the states, 16-byte aligned).
        let bytesOffset: Int
        var allocationSize: Int { bytesOffset + sectorsPerBlock * sectorSize }

        init(sectorSize: Int) {
            self.sectorSize = sectorSize
            sectorsPerBlock = max(1, NORFlashSectors.blockSize / sectorSize)
            let header = MemoryLayout<Int>.stride + sectorsPerBlock * MemoryLayout<SectorState>.stride
            bytesOffset = (header + 15) & ~15
        }

        func keptCount(_ block: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Int> {
            block.assumingMemoryBound(to: Int.self)
        }

        func sector(_ slot: Int, of block: UnsafeMutableRawPointer) -> Sector {
            Sector(
                state: (block + MemoryLayout<Int>.stride).assumingMemoryBound(to: SectorState.self) + slot,
                bytes: UnsafeMutableRawBufferPointer(start: block + bytesOffset + slot * sectorSize, count: sectorSize))
        }
    }

    /// The slot's blocks, by index (`nil`: none of its sectors kept), grown as far as the highest
    /// one written; each freed when the last of its sectors is erased, and all when the slot goes.
    /// Used only by its owner, behind the owner's lock.
    private final class Blocks: @unchecked Sendable {
        let layout: Layout
        var table: [UnsafeMutableRawPointer?] = []
        /// Blocks allocated: each holds at least one kept sector.
        var allocated = 0

        init(layout: Layout) { self.layout = layout }

        /// Block `index`, allocated (its sectors all erased) if it was not.
        func block(_ index: Int) -> UnsafeMutableRawPointer {
            if index < table.count, let block = table[index] { return block }
            if index >= table.count { table.append(contentsOf: repeatElement(nil, count: index + 1 - table.count)) }
            let block = UnsafeMutableRawPointer.allocate(byteCount: layout.allocationSize, alignment: 16)
            layout.keptCount(block).initialize(to: 0)
            for slot in 0..<layout.sectorsPerBlock {
                layout.sector(slot, of: block).state.initialize(to: SectorState(erasedFrom: -1, initialized: 0))
            }
            table[index] = block
            allocated += 1
            return block
        }

        /// Sector `index`'s block, if it has one (the sector may still be erased).
        func existingBlock(_ index: Int) -> UnsafeMutableRawPointer? {
            index < table.count ? table[index] : nil
        }

        /// Frees block `index`.
        func free(_ index: Int) {
            table[index]?.deallocate()
            table[index] = nil
            allocated -= 1
        }

        deinit {
            for block in table { block?.deallocate() }
        }
    }

    /// One sector's state and bytes, inside its block: pointers its owner uses only behind its
    /// lock, while the block is allocated.
    private struct Sector: @unchecked Sendable {
        let state: UnsafeMutablePointer<SectorState>
        let bytes: UnsafeMutableRawBufferPointer

        var isKept: Bool { state.pointee.erasedFrom >= 0 }

        /// Programs `source` at `start`: ANDed into the bytes programmed before, copied where the
        /// sector is erased.
        func program(_ source: UnsafeRawBufferPointer, at start: Int) {
            let end = start + source.count
            let initialized = state.pointee.initialized
            let erasedFrom = state.pointee.erasedFrom
            if start > initialized { fillErased(initialized..<start) }
            if start < erasedFrom {
                let anded = min(end, erasedFrom)
                NORFlashSectors.program(
                    UnsafeRawBufferPointer(rebasing: source[0..<(anded - start)]),
                    into: UnsafeMutableRawBufferPointer(rebasing: bytes[start..<anded]))
                if end > anded {
                    bytes.baseAddress!.advanced(by: anded)
                        .copyMemory(from: source.baseAddress!.advanced(by: anded - start), byteCount: end - anded)
                }
            } else {
                bytes.baseAddress!.advanced(by: start).copyMemory(from: source.baseAddress!, byteCount: source.count)
            }
            state.pointee.erasedFrom = max(erasedFrom, end)
            state.pointee.initialized = max(initialized, end)
        }

        /// Puts the whole sector in memory (its untouched bytes as `0xFF`).
        func fillAll() {
            if state.pointee.initialized < bytes.count { fillErased(state.pointee.initialized..<bytes.count) }
            state.pointee.initialized = bytes.count
        }

        private func fillErased(_ range: Range<Int>) {
            UnsafeMutableRawBufferPointer(rebasing: bytes[range]).initializeMemory(as: UInt8.self, repeating: 0xFF)
        }
    }

    /// An erased slot of `capacity` bytes in sectors of `sectorSize` bytes.
    ///
    /// - Precondition: `capacity` is a positive whole number of sectors.
    package init(capacity: Int, sectorSize: Int) {
        precondition(sectorSize > 0, "the sector size must be positive")
        precondition(
            capacity > 0 && capacity % sectorSize == 0,
            "the capacity must be a positive whole number of \(sectorSize)-byte sectors")
        self.capacity = capacity
        self.sectorSize = sectorSize
        blocks = Blocks(layout: Layout(sectorSize: sectorSize))
    }

    /// The bytes an erase of `range` resets: `range` rounded out to sector boundaries (empty for an
    /// empty `range`).
    package static func sectors(covering range: Range<Int>, sectorSize: Int, capacity: Int) -> Range<Int> {
        guard !range.isEmpty else { return range.lowerBound..<range.lowerBound }
        let first = range.lowerBound / sectorSize * sectorSize
        let end = min(capacity, (range.upperBound + sectorSize - 1) / sectorSize * sectorSize)
        return first..<end
    }

    /// Checks that an erase of `range` stays inside a slot of `capacity` bytes.
    package static func checkErase(_ range: Range<Int>, capacity: Int) throws(FlashError) {
        guard range.lowerBound >= 0, range.upperBound <= capacity else {
            throw FlashError(
                "erase of 0x\(Hex.digits(range.lowerBound, uppercase: false))..<0x\(Hex.digits(range.upperBound, uppercase: false)) is outside the \(capacity)-byte slot"
            )
        }
    }

    /// Checks that a write of `count` bytes at `offset` stays inside a slot of `capacity` bytes.
    package static func checkWrite(count: Int, at offset: Int, capacity: Int) throws(FlashError) {
        guard offset >= 0, offset + count <= capacity else {
            throw FlashError(
                "write of \(count) bytes at 0x\(Hex.digits(offset, uppercase: false)) is outside the \(capacity)-byte slot")
        }
    }

    /// Forgets the sectors of `erased` (sector-aligned, inside the slot), which then read `0xFF`;
    /// a block whose sectors are all erased is freed.
    package mutating func erase(sectorsOf erased: Range<Int>) {
        guard !erased.isEmpty else { return }
        let layout = blocks.layout
        for index in (erased.lowerBound / sectorSize)..<(erased.upperBound / sectorSize) {
            if recentIndex == index {
                recentIndex = -1
                recentSector = nil
            }
            let blockIndex = index / layout.sectorsPerBlock
            guard let block = blocks.existingBlock(blockIndex) else { continue }
            let sector = layout.sector(index % layout.sectorsPerBlock, of: block)
            guard sector.isKept else { continue }
            sector.state.pointee = SectorState(erasedFrom: -1, initialized: 0)
            let kept = layout.keptCount(block)
            kept.pointee -= 1
            if kept.pointee == 0 { blocks.free(blockIndex) }
        }
    }

    /// Programs `data` at `offset` (inside the slot): each byte becomes the bitwise AND of what was
    /// there and the new value.
    package mutating func write(_ data: Data, at offset: Int) {
        guard !data.isEmpty else { return }
        data.withUnsafeBytes { write($0, at: offset) }
    }

    /// Programs the bytes `source` points at, at `offset` (inside the slot), as
    /// ``write(_:at:)-(Data,_)`` does.
    package mutating func write(_ source: UnsafeRawBufferPointer, at offset: Int) {
        guard !source.isEmpty else { return }
        // Most writes (a packet, a page) lie in one sector: programmed there without the split
        // into spans and its slicing.
        let index = offset / sectorSize
        let start = offset - index * sectorSize
        if start + source.count <= sectorSize {
            sector(index).program(source, at: start)
            return
        }
        Self.forEachSpan(of: offset..<(offset + source.count), sectorSize: sectorSize) { index, start, count, position in
            let bytes = UnsafeRawBufferPointer(rebasing: source[(position - offset)..<(position - offset + count)])
            sector(index).program(bytes, at: start)
        }
    }

    /// Calls `body` for each piece of `range` that lies in one sector, in order: the sector's
    /// index, where the piece starts in that sector, its length, and where it starts in the slot.
    @inline(__always)
    private static func forEachSpan(
        of range: Range<Int>, sectorSize: Int, _ body: (_ index: Int, _ start: Int, _ count: Int, _ position: Int) -> Void
    ) {
        var position = range.lowerBound
        while position < range.upperBound {
            let index = position / sectorSize
            let start = position - index * sectorSize
            let count = min(sectorSize - start, range.upperBound - position)
            body(index, start, count, position)
            position += count
        }
    }

    /// The sector `index`, kept from now on if it was erased (its block allocated if it had
    /// none).
    private mutating func sector(_ index: Int) -> Sector {
        if index == recentIndex, let recent = recentSector { return recent }
        let layout = blocks.layout
        let block = blocks.block(index / layout.sectorsPerBlock)
        let sector = layout.sector(index % layout.sectorsPerBlock, of: block)
        if !sector.isKept {
            sector.state.pointee = SectorState(erasedFrom: 0, initialized: 0)
            layout.keptCount(block).pointee += 1
        }
        recentIndex = index
        recentSector = sector
        return sector
    }

    /// The sector `index` if it is kept; `nil` if it reads erased.
    private func keptSector(_ index: Int) -> Sector? {
        let layout = blocks.layout
        guard let block = blocks.existingBlock(index / layout.sectorsPerBlock) else { return nil }
        let sector = layout.sector(index % layout.sectorsPerBlock, of: block)
        return sector.isKept ? sector : nil
    }

    /// ANDs `bytes` into `target` (of the same length) eight bytes at a time.
    fileprivate static func program(_ bytes: UnsafeRawBufferPointer, into target: UnsafeMutableRawBufferPointer) {
        let count = bytes.count
        var index = 0
        while index + 8 <= count {
            let word = target.loadUnaligned(fromByteOffset: index, as: UInt64.self) & bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            target.storeBytes(of: word, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < count {
            target[index] &= bytes[index]
            index += 1
        }
    }

    /// Reads `range`, clamped to the slot.
    package func read(_ range: Range<Int>) -> Data {
        let clamped = range.clamped(to: 0..<capacity)
        guard !clamped.isEmpty else { return Data() }
        var data = Data(repeating: 0xFF, count: clamped.count)
        guard blocks.allocated > 0 else { return data }
        data.withUnsafeMutableBytes { target in
            Self.forEachSpan(of: clamped, sectorSize: sectorSize) { index, start, count, position in
                guard let sector = keptSector(index) else { return }
                // Past `initialized` the bytes read as erased, as `data` already holds.
                let copied = min(count, sector.state.pointee.initialized - start)
                if copied > 0 {
                    target.baseAddress!.advanced(by: position - clamped.lowerBound)
                        .copyMemory(from: sector.bytes.baseAddress!.advanced(by: start), byteCount: copied)
                }
            }
        }
        return data
    }

    /// Calls `body` with each sector's bytes in `range` (clamped to the slot), in order, without
    /// copying them: an erased sector is handed out as one shared run of `0xFF`.
    package func forEachPiece(of range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void) {
        let clamped = range.clamped(to: 0..<capacity)
        guard !clamped.isEmpty else { return }
        var erased: [UInt8] = []
        Self.forEachSpan(of: clamped, sectorSize: sectorSize) { index, start, count, _ in
            if let sector = keptSector(index) {
                if start + count > sector.state.pointee.initialized { sector.fillAll() }
                body(UnsafeRawBufferPointer(rebasing: sector.bytes[start..<(start + count)]))
            } else {
                if erased.isEmpty { erased = [UInt8](repeating: 0xFF, count: sectorSize) }
                erased.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
        }
    }

    /// Calls `body` with each kept sector (programmed since its last erase), in order of its
    /// index: the index and the sector's bytes, without copying them. The erased sectors are
    /// skipped without being visited, so this costs what was written, not the slot.
    package func forEachKeptSector(_ body: (_ index: Int, _ bytes: UnsafeRawBufferPointer) -> Void) {
        let layout = blocks.layout
        for (blockIndex, block) in blocks.table.enumerated() {
            guard let block else { continue }
            for slot in 0..<layout.sectorsPerBlock {
                let sector = layout.sector(slot, of: block)
                guard sector.isKept else { continue }
                sector.fillAll()
                body(blockIndex * layout.sectorsPerBlock + slot, UnsafeRawBufferPointer(sector.bytes))
            }
        }
    }

    /// Bytes of memory the contents take: the blocks that hold kept sectors (their bytes; each
    /// block's few bytes of state in front left out).
    package var residentBytes: Int { blocks.allocated * blocks.layout.sectorsPerBlock * sectorSize }

    /// A slot holding `sectors` (by index, each exactly `sectorSize` bytes), every other sector
    /// erased: what a snapshot of the slot with those sectors gives, without the slot's bytes. A
    /// sector of nothing but `0xFF` is not kept, as from a snapshot.
    ///
    /// - Throws: ``FlashError`` for an index outside the slot or a sector of another size.
    package init(capacity: Int, sectorSize: Int, sectors: [Int: Data]) throws(FlashError) {
        self.init(capacity: capacity, sectorSize: sectorSize)
        for index in sectors.keys.sorted() {
            let bytes = sectors[index]!
            guard index >= 0, index < capacity / sectorSize, bytes.count == sectorSize else {
                throw FlashError("sector \(index) of \(bytes.count) bytes is not one of a \(capacity)-byte slot's \(sectorSize)-byte sectors")
            }
            bytes.withUnsafeBytes { keepUnlessErased(index, $0) }
        }
    }

    /// Keeps sector `index` holding exactly `bytes` (one sector's worth, as programmed), unless
    /// they are all `0xFF`: such a sector reads and programs as an erased one. For a slot being
    /// made (its sectors all erased).
    private mutating func keepUnlessErased(_ index: Int, _ bytes: UnsafeRawBufferPointer) {
        guard bytes.contains(where: { $0 != 0xFF }) else { return }
        let kept = sector(index)
        kept.bytes.copyMemory(from: bytes)
        kept.state.pointee = SectorState(erasedFrom: sectorSize, initialized: sectorSize)
    }

    /// The contents of a snapshot of the whole slot: the sectors that are not wholly erased are
    /// kept.
    ///
    /// - Throws: ``FlashError`` when the snapshot is not exactly `capacity` bytes.
    package init(capacity: Int, sectorSize: Int, snapshot: Data) throws(FlashError) {
        guard snapshot.count == capacity else {
            throw FlashError("a \(snapshot.count)-byte snapshot does not fit a \(capacity)-byte slot")
        }
        self.init(capacity: capacity, sectorSize: sectorSize)
        snapshot.withUnsafeBytes { raw in
            for index in 0..<(capacity / sectorSize) {
                keepUnlessErased(index, UnsafeRawBufferPointer(rebasing: raw[(index * sectorSize)..<((index + 1) * sectorSize)]))
            }
        }
    }
}
