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
}
