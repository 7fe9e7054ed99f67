#if os(Linux)
import Foundation
import OTACore
import Synchronization

/// An update slot in RAM that behaves like NOR flash, for a device model served by
/// ``BlueZPeripheral``: erased bytes read `0xFF`, erasing works on whole sectors, and programming
/// can only clear bits (writing over bytes that were not erased stores the bitwise AND of old and
/// new, as real NOR flash does).
///
/// Unlike the simulator's flash it costs no time: a real peripheral process is as fast as it is.
/// The contents live as long as the object, across the central's disconnects and the model's
/// reboots, so a tool can write them to a file when it stops.
///
/// ```swift
/// let flash = MemoryFlash(capacity: 1 << 20)              // 256 sectors of 4 KiB
/// try flash.erase(0..<1)                                  // erases the first sector
/// try flash.write(Data([0x12, 0x34]), at: 0)
/// flash.read(0..<4)                                       // 12 34 FF FF
/// ```
public final class MemoryFlash: FlashStorage, Sendable {
    /// The erase granularity of a ``MemoryFlash`` unless told otherwise: 4 KiB, as the ESP32's
    /// and nRF52's flash.
    public static let defaultSectorSize = 4096

    public let capacity: Int
    public let sectorSize: Int
    private let bytes: Mutex<[UInt8]>

    /// Creates an erased slot of `capacity` bytes in sectors of `sectorSize` bytes.
    ///
    /// - Precondition: `capacity` is a positive whole number of sectors.
    public init(capacity: Int, sectorSize: Int = MemoryFlash.defaultSectorSize) {
        precondition(sectorSize > 0, "the sector size must be positive")
        precondition(capacity > 0 && capacity % sectorSize == 0, "the capacity must be a positive whole number of \(sectorSize)-byte sectors")
        self.capacity = capacity
        self.sectorSize = sectorSize
        bytes = Mutex([UInt8](repeating: 0xFF, count: capacity))
    }

    /// Erases the sectors covering `range` to `0xFF`; `range` is rounded out to sector boundaries.
    ///
    /// - Throws: ``FlashError`` when `range` reaches outside the slot.
    public func erase(_ range: Range<Int>) throws(FlashError) {
        guard range.lowerBound >= 0, range.upperBound <= capacity else {
            throw FlashError("erase of 0x\(String(range.lowerBound, radix: 16))..<0x\(String(range.upperBound, radix: 16)) is outside the \(capacity)-byte slot")
        }
        guard !range.isEmpty else { return }
        let first = range.lowerBound / sectorSize * sectorSize
        let end = min(capacity, (range.upperBound + sectorSize - 1) / sectorSize * sectorSize)
        bytes.withLock { bytes in
            for index in first..<end { bytes[index] = 0xFF }
        }
    }

    /// Programs `data` at `offset`: each byte becomes the bitwise AND of what was there and the new
    /// value, so only erased bytes take a new value exactly.
    ///
    /// - Throws: ``FlashError`` when the write reaches outside the slot.
    public func write(_ data: Data, at offset: Int) throws(FlashError) {
        guard offset >= 0, offset + data.count <= capacity else {
            throw FlashError("write of \(data.count) bytes at 0x\(String(offset, radix: 16)) is outside the \(capacity)-byte slot")
        }
        bytes.withLock { bytes in
            var index = offset
            for byte in data {
                bytes[index] &= byte
                index += 1
            }
        }
    }

    /// Reads `range`, clamped to the slot.
    public func read(_ range: Range<Int>) -> Data {
        let clamped = range.clamped(to: 0..<capacity)
        return bytes.withLock { Data($0[clamped]) }
    }

    /// The whole slot's contents.
    public func snapshot() -> Data {
        bytes.withLock { Data($0) }
    }
}
#endif
