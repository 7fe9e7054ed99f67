import CChecksum
import CZlib
import Foundation

/// CRC-32 as in IEEE 802.3 and zlib (reflected polynomial 0xEDB88320): folded with carry-less
/// multiplication where the CPU has it (x86-64 with PCLMULQDQ, `CChecksum`), about five times
/// zlib's speed on a 240-byte chunk; computed by the system zlib otherwise and for the last
/// bytes of a buffer (under 16, or under 64 in all).
///
/// This is the checksum that ESP-IDF's `esp_crc32_le`, Python's `zlib.crc32` and Nordic's DFU
/// bootloader use. It can be computed incrementally:
///
/// ```swift
/// var crc = CRC32()
/// crc.update(firstChunk)
/// crc.update(secondChunk)
/// crc.value // same as CRC32.checksum(firstChunk + secondChunk)
/// ```
public struct CRC32: Sendable, Hashable {
    /// The checksum of everything fed so far.
    public private(set) var value: UInt32 = 0

    /// Starts an empty checksum (value 0).
    public init() {}

    /// Continues from a known checksum, for resuming after a prefix whose CRC is known.
    public init(continuingFrom value: UInt32) {
        self.value = value
    }

    /// Feeds more bytes of `Data` (one contiguous region: no generic iteration, no per-call
    /// allocation, so a CRC over a small chunk costs little more than zlib's own work).
    @inlinable
    public mutating func update(_ bytes: Data) {
        bytes.withUnsafeBytes { raw in update(raw) }
    }

    /// Feeds more bytes.
    public mutating func update(_ bytes: some DataProtocol) {
        for region in bytes.regions {
            region.withUnsafeBytes { raw in
                update(raw)
            }
        }
    }

    /// Feeds more bytes from a raw buffer.
    public mutating func update(_ raw: UnsafeRawBufferPointer) {
        guard var base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var remaining = raw.count
        if remaining >= Self.foldingMinimum, Self.foldingAvailable {
            // The folding works on the register (zlib's value inverted), in whole 16-byte blocks.
            let folded = remaining & ~15
            value = ~ota_crc32_fold(~value, base, folded)
            base += folded
            remaining -= folded
        }
        var crc = uLong(value)
        // zlib takes a 32-bit length; feed very large buffers in slices.
        while remaining > 0 {
            let slice = min(remaining, Int(UInt32.max))
            crc = crc32(crc, base, uInt(slice))
            base += slice
            remaining -= slice
        }
        value = UInt32(truncatingIfNeeded: crc)
    }

    /// The shortest buffer folded: four 16-byte lanes.
    static let foldingMinimum = 64

    /// Whether this CPU folds (asked once).
    static let foldingAvailable = ota_crc32_folding_available() != 0

    /// The checksum of `bytes`.
    @inlinable
    public static func checksum(_ bytes: Data) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: some DataProtocol) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }
}
