import Foundation
import Synchronization

/// The one NOR flash model: an update slot in memory where erased bytes read `0xFF`, erasing works
/// on whole sectors, and programming can only clear bits (writing over bytes that were not erased
/// stores the bitwise AND of old and new, as real NOR flash does).
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
    private let bytes: Mutex<[UInt8]>

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
        bytes = Mutex([UInt8](repeating: 0xFF, count: capacity))
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
        bytes.withLock { bytes in
            for index in erased { bytes[index] = 0xFF }
        }
    }

    /// Programs `data` at `offset`: each byte becomes the bitwise AND of what was there and the new
    /// value, so only erased bytes take a new value exactly.
    ///
    /// - Throws: ``FlashError`` when the write reaches outside the slot.
    public func write(_ data: Data, at offset: Int) throws(FlashError) {
        try checkWrite(count: data.count, at: offset)
        bytes.withLock { bytes in
            var index = offset
            for byte in data {
                bytes[index] &= byte
                index += 1
            }
        }
    }

    /// Reads `range`, clamped to the slot (see the type's out-of-range behaviour).
    public func read(_ range: Range<Int>) -> Data {
        let clamped = range.clamped(to: 0..<capacity)
        return bytes.withLock { Data($0[clamped]) }
    }

    /// The whole slot's contents.
    public func snapshot() -> Data {
        bytes.withLock { Data($0) }
    }

    /// Replaces the slot's contents with a ``snapshot()``.
    ///
    /// - Throws: ``FlashError`` when the snapshot is not exactly ``capacity`` bytes.
    public func restore(_ snapshot: Data) throws(FlashError) {
        guard snapshot.count == capacity else {
            throw FlashError("a \(snapshot.count)-byte snapshot does not fit a \(capacity)-byte slot")
        }
        bytes.withLock { $0 = [UInt8](snapshot) }
    }
}
