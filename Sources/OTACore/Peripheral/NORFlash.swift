import Foundation
import Synchronization

/// The one NOR flash model: an update slot in memory where erased bytes read `0xFF`, erasing works
/// on whole sectors, and programming can only clear bits (writing over bytes that were not erased
/// stores the bitwise AND of old and new, as real NOR flash does).
///
/// Memory follows what was written, not the slot's size: only sectors programmed since their last
/// erase are kept, and every other sector reads as erased, so a 12 MiB slot that received 200 KB
/// (and a journal record in its last sector) holds 200 KB and one sector. Writes and erases work
/// in bulk, not byte by byte.
///
/// It costs no time and injects no faults: ``BlueZPeripheral`` serves it as it is (a real
/// peripheral process is as fast as it is), and the simulator's `SimulatedFlash` wraps it with
/// timing, fault injection and persistence.
///
/// Out-of-range behaviour, the same everywhere:
/// - ``erase(_:)`` and ``write(_:at:)`` reaching outside `0..<capacity` throw ``FlashError`` and
///   change nothing; an empty erase changes nothing.
/// - ``read(_:)`` is clamped to the slot: the bytes of `range` inside `0..<capacity` are returned,
///   so a read that starts inside and runs past the end is short, and one wholly outside is empty.
///   A device model answering a client's read never crashes the host on a bad offset; it sees the
///   short read and answers as its firmware would.
///
/// ```swift
/// let flash = NORFlash(capacity: 1 << 20)                 // 256 sectors of 4 KiB
/// try flash.erase(0..<1)                                  // erases the first sector
/// try flash.write(Data([0x12, 0x34]), at: 0)
/// flash.read(0..<4)                                       // 12 34 FF FF
/// flash.read(capacity - 2..<capacity + 2)                 // FF FF: clamped
/// ```
public final class NORFlash: FlashStorage, Sendable {
    /// The erase granularity unless told otherwise: 4 KiB, as the ESP32's and nRF52's flash.
    public static let defaultSectorSize = 4096

    public let capacity: Int
    public let sectorSize: Int
    /// The sectors programmed since their last erase, by index; every other sector is erased
    /// (`0xFF`).
    private let sectors: Mutex<Sectors>

    /// One programmed sector's bytes, in memory of its own that writes change in place: no
    /// copy-on-write check and no dictionary mutation per write. Used only under the lock.
    private final class Sector: @unchecked Sendable {
        let bytes: UnsafeMutableRawBufferPointer
        /// Every byte from here on is erased (`0xFF`) and was not programmed since: programming
        /// there is a copy, not an AND (a stream of writes always lands there).
        var erasedFrom: Int

        /// An erased sector of `size` bytes.
        init(size: Int) {
            bytes = .allocate(byteCount: size, alignment: 8)
            bytes.initializeMemory(as: UInt8.self, repeating: 0xFF)
            erasedFrom = 0
        }

        /// A sector holding a copy of `contents`.
        init(copying contents: UnsafeRawBufferPointer) {
            bytes = .allocate(byteCount: contents.count, alignment: 8)
            bytes.copyMemory(from: contents)
            erasedFrom = contents.count
        }

        /// Programs `source` at `start`: ANDed into what is there, copied where the sector is
        /// erased.
        func program(_ source: UnsafeRawBufferPointer, at start: Int) {
            let end = start + source.count
            if start >= erasedFrom {
                bytes.baseAddress!.advanced(by: start).copyMemory(from: source.baseAddress!, byteCount: source.count)
            } else {
                NORFlash.program(source, into: UnsafeMutableRawBufferPointer(rebasing: bytes[start..<end]))
            }
            erasedFrom = max(erasedFrom, end)
        }

        deinit { bytes.deallocate() }
    }

    /// The kept sectors, and the one written last: a stream of writes goes to one sector at a
    /// time, so most writes find theirs without a lookup.
    private struct Sectors: Sendable {
        var kept: [Int: Sector] = [:]
        var recent: (index: Int, sector: Sector)?

        /// The sector `index` if it is kept.
        mutating func sector(_ index: Int) -> Sector? {
            if let recent, recent.index == index { return recent.sector }
            guard let sector = kept[index] else { return nil }
            recent = (index, sector)
            return sector
        }

        mutating func keep(_ sector: Sector, at index: Int) {
            kept[index] = sector
            recent = (index, sector)
        }

        mutating func forget(_ index: Int) {
            kept[index] = nil
            if recent?.index == index { recent = nil }
        }
    }

    /// Creates an erased slot of `capacity` bytes in sectors of `sectorSize` bytes.
    ///
    /// - Precondition: `capacity` is a positive whole number of sectors.
    public init(capacity: Int, sectorSize: Int = NORFlash.defaultSectorSize) {
        precondition(sectorSize > 0, "the sector size must be positive")
        precondition(
            capacity > 0 && capacity % sectorSize == 0,
            "the capacity must be a positive whole number of \(sectorSize)-byte sectors")
        self.capacity = capacity
        self.sectorSize = sectorSize
        sectors = Mutex(Sectors())
    }

    /// The bytes an erase of `range` resets: `range` rounded out to sector boundaries (empty for an
    /// empty `range`).
    public func sectors(covering range: Range<Int>) -> Range<Int> {
        guard !range.isEmpty else { return range.lowerBound..<range.lowerBound }
        let first = range.lowerBound / sectorSize * sectorSize
        let end = min(capacity, (range.upperBound + sectorSize - 1) / sectorSize * sectorSize)
        return first..<end
    }

    /// Checks that an erase of `range` stays inside the slot.
    public func checkErase(_ range: Range<Int>) throws(FlashError) {
        guard range.lowerBound >= 0, range.upperBound <= capacity else {
            throw FlashError(
                "erase of 0x\(Hex.digits(range.lowerBound, uppercase: false))..<0x\(Hex.digits(range.upperBound, uppercase: false)) is outside the \(capacity)-byte slot"
            )
        }
    }

    /// Checks that a write of `count` bytes at `offset` stays inside the slot.
    public func checkWrite(count: Int, at offset: Int) throws(FlashError) {
        guard offset >= 0, offset + count <= capacity else {
            throw FlashError(
                "write of \(count) bytes at 0x\(Hex.digits(offset, uppercase: false)) is outside the \(capacity)-byte slot")
        }
    }

    /// Erases the sectors covering `range` to `0xFF` (see ``sectors(covering:)``).
    ///
    /// - Throws: ``FlashError`` when `range` reaches outside the slot.
    public func erase(_ range: Range<Int>) throws(FlashError) {
        try checkErase(range)
        let erased = sectors(covering: range)
        guard !erased.isEmpty else { return }
        let sectorSize = self.sectorSize
        sectors.withLock { sectors in
            for index in (erased.lowerBound / sectorSize)..<(erased.upperBound / sectorSize) { sectors.forget(index) }
        }
    }

    /// Programs `data` at `offset`: each byte becomes the bitwise AND of what was there and the new
    /// value, so only erased bytes take a new value exactly.
    ///
    /// - Throws: ``FlashError`` when the write reaches outside the slot.
    public func write(_ data: Data, at offset: Int) throws(FlashError) {
        try checkWrite(count: data.count, at: offset)
        guard !data.isEmpty else { return }
        let sectorSize = self.sectorSize
        let end = offset + data.count
        sectors.withLock { sectors in
            data.withUnsafeBytes { (source: UnsafeRawBufferPointer) in
                var position = offset
                while position < end {
                    let index = position / sectorSize
                    let start = position - index * sectorSize
                    let count = min(sectorSize - start, end - position)
                    let bytes = UnsafeRawBufferPointer(rebasing: source[(position - offset)..<(position - offset + count)])
                    if let sector = sectors.sector(index) {
                        sector.program(bytes, at: start)
                    } else {
                        // An erased sector: programming it is a copy.
                        let sector = Sector(size: sectorSize)
                        sector.program(bytes, at: start)
                        sectors.keep(sector, at: index)
                    }
                    position += count
                }
            }
        }
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

    /// Reads `range`, clamped to the slot (see the type's out-of-range behaviour).
    public func read(_ range: Range<Int>) -> Data {
        let clamped = range.clamped(to: 0..<capacity)
        guard !clamped.isEmpty else { return Data() }
        let sectorSize = self.sectorSize
        var data = Data(repeating: 0xFF, count: clamped.count)
        sectors.withLock { sectors in
            guard !sectors.kept.isEmpty else { return }
            data.withUnsafeMutableBytes { target in
                var position = clamped.lowerBound
                while position < clamped.upperBound {
                    let index = position / sectorSize
                    let start = position - index * sectorSize
                    let count = min(sectorSize - start, clamped.upperBound - position)
                    if let sector = sectors.kept[index] {
                        target.baseAddress!.advanced(by: position - clamped.lowerBound)
                            .copyMemory(from: sector.bytes.baseAddress!.advanced(by: start), byteCount: count)
                    }
                    position += count
                }
            }
        }
        return data
    }

    /// Calls `body` with each sector's bytes in `range` (clamped to the slot), in order, without
    /// copying them: an erased sector is handed out as one shared run of `0xFF`. Runs under the
    /// flash's lock, so `body` must not erase or write it.
    public func forEachPiece(of range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void) {
        let clamped = range.clamped(to: 0..<capacity)
        guard !clamped.isEmpty else { return }
        let sectorSize = self.sectorSize
        var erased: [UInt8] = []
        sectors.withLock { sectors in
            var position = clamped.lowerBound
            while position < clamped.upperBound {
                let index = position / sectorSize
                let start = position - index * sectorSize
                let count = min(sectorSize - start, clamped.upperBound - position)
                if let sector = sectors.kept[index] {
                    body(UnsafeRawBufferPointer(rebasing: sector.bytes[start..<(start + count)]))
                } else {
                    if erased.isEmpty { erased = [UInt8](repeating: 0xFF, count: sectorSize) }
                    erased.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                }
                position += count
            }
        }
    }

    /// Bytes of memory the slot's contents take now: the sectors programmed since their last erase.
    public var residentBytes: Int { sectors.withLock { $0.kept.count } * sectorSize }

    /// The whole slot's contents.
    public func snapshot() -> Data {
        read(0..<capacity)
    }

    /// Replaces the slot's contents with a ``snapshot()``.
    ///
    /// - Throws: ``FlashError`` when the snapshot is not exactly ``capacity`` bytes.
    public func restore(_ snapshot: Data) throws(FlashError) {
        guard snapshot.count == capacity else {
            throw FlashError("a \(snapshot.count)-byte snapshot does not fit a \(capacity)-byte slot")
        }
        // Kept: the sectors that are not wholly erased.
        var kept = Sectors()
        snapshot.withUnsafeBytes { raw in
            for index in 0..<(capacity / sectorSize) {
                let sector = UnsafeRawBufferPointer(rebasing: raw[(index * sectorSize)..<((index + 1) * sectorSize)])
                if sector.contains(where: { $0 != 0xFF }) { kept.kept[index] = Sector(copying: sector) }
            }
        }
        sectors.withLock { $0 = kept }
    }
}
