import Foundation
import OTACore

/// A frame the client writes to the command characteristic (0x8022): always 20 bytes, the
/// command ID (u16 LE), 16 payload bytes (zero where unused) and a CRC-16 of bytes 0…17 (LE).
public enum EspressifCommand: Sendable, Hashable, CustomStringConvertible {
    /// START OTA (0x0001) with the firmware's total length.
    case start(length: UInt32)
    /// STOP OTA (0x0002): the end of the transfer, or an abort.
    case stop

    /// Every command frame is this long.
    public static let length = 20

    /// START's command ID.
    public static let startID: UInt16 = 0x0001
    /// STOP's command ID.
    public static let stopID: UInt16 = 0x0002

    /// The command ID on the wire.
    public var id: UInt16 {
        switch self {
        case .start: Self.startID
        case .stop: Self.stopID
        }
    }

    /// The 20 bytes written.
    public var encoded: Data {
        var payload = [UInt8](repeating: 0, count: 16)
        if case .start(let length) = self {
            for index in 0..<4 { payload[index] = UInt8(truncatingIfNeeded: length >> (8 * index)) }
        }
        return EspressifFrame.seal(id: id, payload: payload)
    }

    /// Decodes a command as the device reads it.
    ///
    /// With `strict` (the `ble_ota_raw` profile) the frame must be 20 bytes with a matching CRC;
    /// without it (both `ble_ota` builds) only the ID and, for START, the length are read, from a
    /// frame of at least 6 bytes. `nil` for an unknown ID or a frame that fails those checks.
    public init?(decoding value: Data, strict: Bool) {
        let bytes = [UInt8](value)
        if strict {
            guard EspressifFrame.isSealed(bytes) else { return nil }
        } else if bytes.count < 6 {
            return nil
        }
        var reader = ByteReader(value)
        guard let id = reader.u16() else { return nil }
        switch id {
        case Self.startID:
            guard let length = reader.u32() else { return nil }
            self = .start(length: length)
        case Self.stopID:
            self = .stop
        default:
            return nil
        }
    }

    /// "START (204800 bytes)", "STOP".
    public var description: String {
        switch self {
        case .start(let length): "START (\(length) bytes)"
        case .stop: "STOP"
        }
    }
}

/// The 20-byte frame shared by commands and acknowledgements: bytes 0…17 then their CRC-16 (LE).
enum EspressifFrame {
    static func seal(id: UInt16, payload: [UInt8]) -> Data {
        precondition(payload.count == 16, "a frame carries 16 payload bytes")
        var bytes = [UInt8(truncatingIfNeeded: id), UInt8(id >> 8)] + payload
        let crc = EspressifCRC16.checksum(bytes)
        bytes += [UInt8(truncatingIfNeeded: crc), UInt8(crc >> 8)]
        return Data(bytes)
    }

    static func isSealed(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == EspressifCommand.length else { return false }
        let crc = UInt16(bytes[18]) | UInt16(bytes[19]) << 8
        return EspressifCRC16.checksum(bytes[0..<18]) == crc
    }
}
