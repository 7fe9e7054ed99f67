import Foundation
import Synchronization

/// The one NOR flash model: an update slot in memory where erased bytes read `0xFF`, erasing works
/// on whole sectors, and programming can only clear bits (writing over bytes that were not erased
/// stores the bitwise AND of old and new, as real NOR flash does).
///
/// Memory follows what was written, not the slot's size: only sectors programmed since their last
/// erase are kept, in blocks of 32 KiB (eight 4 KiB sectors), and every other sector reads as
/// erased, so a 12 MiB slot that received 200 KB (and a journal record in its last sector) holds
/// seven blocks and one more. Writes and erases work in bulk, not byte by byte, and take one lock
/// each; a block is allocated when one of its sectors is first written, not filled with `0xFF`
/// first (``NORFlashSectors``).
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
    private let sectors: Mutex<NORFlashSectors>

    /// Creates an erased slot of `capacity` bytes in sectors of `sectorSize` bytes.
    ///
    /// - Precondition: `capacity` is a positive whole number of sectors.
    public init(capacity: Int, sectorSize: Int = NORFlash.defaultSectorSize) {
        let contents = NORFlashSectors(capacity: capacity, sectorSize: sectorSize)
        self.capacity = capacity
        self.sectorSize = sectorSize
        sectors = Mutex(contents)
    }

    /// The bytes an erase of `range` resets: `range` rounded out to sector boundaries (empty for an
    /// empty `range`).
    public func sectors(covering range: Range<Int>) -> Range<Int> {
        NORFlashSectors.sectors(covering: range, sectorSize: sectorSize, capacity: capacity)
    }

    /// Checks that an erase of `range` stays inside the slot.
    public func checkErase(_ range: Range<Int>) throws(FlashError) {
        try NORFlashSectors.checkErase(range, capacity: capacity)
    }

    /// Checks that a write of `count` bytes at `offset` stays inside the slot.
    public func checkWrite(count: Int, at offset: Int) throws(FlashError) {
        try NORFlashSectors.checkWrite(count: count, at: offset, capacity: capacity)
    }

    /// Erases the sectors covering `range` to `0xFF` (see ``sectors(covering:)``).
    ///
    /// - Throws: ``FlashError`` when `range` reaches outside the slot.
    public func erase(_ range: Range<Int>) throws(FlashError) {
        try checkErase(range)
        let erased = sectors(covering: range)
        guard !erased.isEmpty else { return }
        sectors.withLock { $0.erase(sectorsOf: erased) }
    }

    /// Programs `data` at `offset`: each byte becomes the bitwise AND of what was there and the new
    /// value, so only erased bytes take a new value exactly.
    ///
    /// - Throws: ``FlashError`` when the write reaches outside the slot.
    public func write(_ data: Data, at offset: Int) throws(FlashError) {
        try checkWrite(count: data.count, at: offset)
        guard !data.isEmpty else { return }
        sectors.withLock { $0.write(data, at: offset) }
    }

    /// Programs the bytes `bytes` points at, at `offset`, as ``write(_:at:)-(Data,_)`` does.
    ///
    /// - Throws: ``FlashError`` when the write reaches outside the slot.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(FlashError) {
        try checkWrite(count: bytes.count, at: offset)
        guard !bytes.isEmpty else { return }
        sectors.withLock { $0.write(bytes, at: offset) }
    }

    /// Reads `range`, clamped to the slot (see the type's out-of-range behaviour).
    public func read(_ range: Range<Int>) -> Data {
        sectors.withLock { $0.read(range) }
    }

    /// Calls `body` with each sector's bytes in `range` (clamped to the slot), in order, without
    /// copying them: an erased sector is handed out as one shared run of `0xFF`. Runs under the
    /// flash's lock, so `body` must not erase or write it.
    public func forEachPiece(of range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void) {
        sectors.withLock { $0.forEachPiece(of: range, body) }
    }

    /// Bytes of memory the slot's contents take now: the blocks of 32 KiB (whole sectors) that hold
    /// sectors programmed since their last erase.
    public var residentBytes: Int { sectors.withLock { $0.residentBytes } }

    /// The whole slot's contents.
    public func snapshot() -> Data {
        read(0..<capacity)
    }

    /// Replaces the slot's contents with a ``snapshot()``.
    ///
    /// - Throws: ``FlashError`` when the snapshot is not exactly ``capacity`` bytes.
    public func restore(_ snapshot: Data) throws(FlashError) {
        let kept = try NORFlashSectors(capacity: capacity, sectorSize: sectorSize, snapshot: snapshot)
        sectors.withLock { $0 = kept }
    }
}
