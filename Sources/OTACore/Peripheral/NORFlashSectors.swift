import Foundation

/// The contents of a NOR flash slot, without a lock: the sectors programmed since their last
/// erase, each allocated when first written, and every other sector read as erased (`0xFF`).
///
/// ``NORFlash`` keeps one behind its lock; the simulator's flash keeps one beside its timing and
/// counters behind a single lock, so that a write takes one lock, not two. Writes and erases work
/// in bulk. A new sector is not filled with `0xFF` first: its bytes past the ones written are
/// read as erased, and filled only when a caller needs them in memory
/// (``forEachPiece(of:_:)``).
///
/// Its methods assume the ranges were checked (``checkErase(_:capacity:)``,
/// ``checkWrite(count:at:capacity:)``)
/// and, for reads, clamped to the slot.
package struct NORFlashSectors: Sendable {
    package let capacity: Int
    package let sectorSize: Int
    /// The sectors programmed since their last erase, by index.
    private var kept: [Int: Sector] = [:]
    /// The sector written last (its index, -1 for none): a stream of writes goes to one sector
    /// at a time, so most writes find theirs without a lookup. Unretained: `kept` holds it for as
    /// long as it is the recent one (an erase that forgets it clears it here first), and
    /// a strong reference here was retained and released around every write.
    private var recentIndex = -1
    private var recentSector: Unmanaged<Sector>?

    /// One programmed sector's bytes, in memory of its own that writes change in place: no
    /// copy-on-write check and no dictionary mutation per write. Used only by its owner, behind
    /// the owner's lock.
    private final class Sector: @unchecked Sendable {
        let bytes: UnsafeMutableRawBufferPointer
        /// Every byte from here on is erased (`0xFF`) and was not programmed since: programming
        /// there is a copy, not an AND (a stream of writes always lands there).
        var erasedFrom: Int
        /// The bytes before this are in memory; the ones from `erasedFrom` up to it are `0xFF`,
        /// the ones after it were never touched and read as `0xFF`. At least `erasedFrom`.
        var initialized: Int

        /// An erased sector of `size` bytes, none of them in memory yet.
        init(size: Int) {
            bytes = .allocate(byteCount: size, alignment: 8)
            erasedFrom = 0
            initialized = 0
        }

        /// A sector holding a copy of `contents`.
        init(copying contents: UnsafeRawBufferPointer) {
            bytes = .allocate(byteCount: contents.count, alignment: 8)
            bytes.copyMemory(from: contents)
            erasedFrom = contents.count
            initialized = contents.count
        }

        /// Programs `source` at `start`: ANDed into the bytes programmed before, copied where the
        /// sector is erased.
        func program(_ source: UnsafeRawBufferPointer, at start: Int) {
            let end = start + source.count
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
            erasedFrom = max(erasedFrom, end)
            initialized = max(initialized, end)
        }

        /// Puts the whole sector in memory (its untouched bytes as `0xFF`).
        func fillAll() {
            if initialized < bytes.count { fillErased(initialized..<bytes.count) }
            initialized = bytes.count
        }

        private func fillErased(_ range: Range<Int>) {
            UnsafeMutableRawBufferPointer(rebasing: bytes[range]).initializeMemory(as: UInt8.self, repeating: 0xFF)
        }

        deinit { bytes.deallocate() }
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

    /// Forgets the sectors of `erased` (sector-aligned, inside the slot), which then read `0xFF`.
    package mutating func erase(sectorsOf erased: Range<Int>) {
        guard !erased.isEmpty else { return }
        for index in (erased.lowerBound / sectorSize)..<(erased.upperBound / sectorSize) {
            kept[index] = nil
            if recentIndex == index {
                recentIndex = -1
                recentSector = nil
            }
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
            sector(index)._withUnsafeGuaranteedRef { $0.program(source, at: start) }
            return
        }
        Self.forEachSpan(of: offset..<(offset + source.count), sectorSize: sectorSize) { index, start, count, position in
            let bytes = UnsafeRawBufferPointer(rebasing: source[(position - offset)..<(position - offset + count)])
            sector(index)._withUnsafeGuaranteedRef { $0.program(bytes, at: start) }
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

    /// The sector `index`, kept from now on if it was erased; unretained, as `kept` holds it
    /// (used at once, before anything can erase it).
    private mutating func sector(_ index: Int) -> Unmanaged<Sector> {
        if index == recentIndex, let recent = recentSector { return recent }
        let sector: Sector
        if let found = kept[index] {
            sector = found
        } else {
            sector = Sector(size: sectorSize)
            kept[index] = sector
        }
        let unretained = Unmanaged.passUnretained(sector)
        recentIndex = index
        recentSector = unretained
        return unretained
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
        guard !kept.isEmpty else { return data }
        data.withUnsafeMutableBytes { target in
            Self.forEachSpan(of: clamped, sectorSize: sectorSize) { index, start, count, position in
                guard let sector = kept[index] else { return }
                // Past `initialized` the bytes read as erased, as `data` already holds.
                let copied = min(count, sector.initialized - start)
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
            if let sector = kept[index] {
                if start + count > sector.initialized { sector.fillAll() }
                body(UnsafeRawBufferPointer(rebasing: sector.bytes[start..<(start + count)]))
            } else {
                if erased.isEmpty { erased = [UInt8](repeating: 0xFF, count: sectorSize) }
                erased.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
        }
    }

    /// How many sectors are kept: the ones programmed since their last erase.
    package var keptSectors: Int { kept.count }

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
                let sector = UnsafeRawBufferPointer(rebasing: raw[(index * sectorSize)..<((index + 1) * sectorSize)])
                if sector.contains(where: { $0 != 0xFF }) { kept[index] = Sector(copying: sector) }
            }
        }
    }
}
