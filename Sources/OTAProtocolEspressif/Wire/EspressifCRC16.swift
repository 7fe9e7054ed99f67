import CChecksum
import Foundation

/// The CRC-16 the component puts on command frames, acknowledgements and sector data: polynomial
/// 0x1021, initial value 0, MSB first, no final XOR (the catalogue's CRC-16/XMODEM; Espressif
/// calls it "CRC16-CCITT"). Check value for ASCII `123456789`: 0x31C3.
public enum EspressifCRC16 {
    private static let table: [UInt16] = (0..<256).map { byte in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }

    /// The CRC of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes { crc = (crc << 8) ^ table[Int(UInt8(crc >> 8) ^ byte)] }
        return crc
    }

    /// The CRC of `data`: the same value, over its bytes in place (a sector's CRC is computed
    /// once per 4 KiB on the client and on the device, so a `Data` is not iterated byte by byte).
    public static func checksum(_ data: Data) -> UInt16 {
        data.withUnsafeBytes { checksum($0) }
    }

    /// `slices[k * 256 + v]`: the CRC of the byte `v` followed by `k` zero bytes, from a zero
    /// register. The CRC is linear, so eight bytes at once are eight independent lookups XORed
    /// (slicing by eight), where a byte at a time waits on the previous lookup for every byte.
    private static let slices: [UInt16] = {
        var slices = table
        for k in 1..<8 {
            for v in 0..<256 {
                let previous = slices[(k - 1) * 256 + v]
                slices.append((previous << 8) ^ table[Int(previous >> 8)])
            }
        }
        return slices
    }()

    /// The CRC of the bytes in `raw` (a sector is 4096 of them, on the client and on the
    /// device): folded with carry-less multiplication, 16 bytes a step, where the CPU can
    /// (x86-64 with PCLMULQDQ, `CChecksum`; decision 0064), the rest eight bytes per table step.
    public static func checksum(_ raw: UnsafeRawBufferPointer) -> UInt16 {
        var crc: UInt16 = 0
        var rest = raw
        if raw.count >= foldingMinimum, foldingAvailable, let base = raw.baseAddress {
            let folded = raw.count & ~15
            crc = ota_crc16_xmodem_fold(0, base.assumingMemoryBound(to: UInt8.self), folded)
            rest = UnsafeRawBufferPointer(rebasing: raw[folded...])
        }
        return sliced(rest, from: crc)
    }

    /// Below this many bytes the table is as fast as setting up the folding.
    static let foldingMinimum = 64

    /// Whether this CPU folds (asked once; the CRC-32 folding's check: PCLMULQDQ and SSE4.1).
    static let foldingAvailable = ota_crc32_folding_available() != 0

    /// The CRC of the bytes in `raw` continued from `initial`, eight bytes per table step
    /// (slicing by eight): where the CPU cannot fold, and the tail after the folding.
    static func sliced(_ raw: UnsafeRawBufferPointer, from initial: UInt16 = 0) -> UInt16 {
        slices.withUnsafeBufferPointer { t in
            var crc = initial
            var i = 0
            let count = raw.count
            // The register's two bytes fold into the first two message bytes (MSB first, no
            // reflection), then each byte is advanced by the zeros that follow it in the step.
            while i + 8 <= count {
                let m0 = UInt8(truncatingIfNeeded: crc >> 8) ^ raw[i]
                let m1 = UInt8(truncatingIfNeeded: crc) ^ raw[i + 1]
                crc =
                    t[1792 + Int(m0)] ^ t[1536 + Int(m1)] ^ t[1280 + Int(raw[i + 2])] ^ t[1024 + Int(raw[i + 3])]
                    ^ t[768 + Int(raw[i + 4])] ^ t[512 + Int(raw[i + 5])] ^ t[256 + Int(raw[i + 6])] ^ t[Int(raw[i + 7])]
                i += 8
            }
            while i < count {
                crc = (crc << 8) ^ t[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ raw[i])]
                i += 1
            }
            return crc
        }
    }
}
