import Foundation
import OTACore

/// The status of a sector acknowledgement.
public struct EspressifSectorStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The value on the wire; unknown values are kept so a message can name them.
    public var rawValue: UInt16
    /// Creates a status.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 0x0000: the sector was received and written.
    public static let success = Self(rawValue: 0x0000)
    /// 0x0001: the sector's CRC-16 did not match (`ble_ota_raw` only checks it).
    public static let crcError = Self(rawValue: 0x0001)
    /// 0x0002: not the sector the device expects, or a sector with a bad packet sequence (NimBLE);
    /// resend the sector named in the acknowledgement.
    public static let sectorIndexError = Self(rawValue: 0x0002)
    /// 0x0003: a packet or sector of the wrong length, or a packet out of sequence (`ble_ota_raw`).
    public static let payloadLengthError = Self(rawValue: 0x0003)

    /// "CRC error", "status 0x0009".
    public var description: String {
        switch self {
        case .success: "success"
        case .crcError: "CRC error"
        case .sectorIndexError: "sector index error"
        case .payloadLengthError: "payload length error"
        default: "status \(Hex.number(rawValue, digits: 4))"
        }
    }
}

/// The device's acknowledgement of a sector, notified on the firmware characteristic: 20 bytes,
/// the sector acknowledged (as received), a status, the sector the device expects now, zeros,
/// and a CRC-16 of bytes 0…17.
public struct EspressifSectorAck: Sendable, Hashable, CustomStringConvertible {
    /// The sector index acknowledged, as the device received it.
    public var sector: UInt16
    /// The verdict.
    public var status: EspressifSectorStatus
    /// The sector the device expects next (after success) or again (after an error).
    public var expected: UInt16

    /// Creates an acknowledgement.
    public init(sector: UInt16, status: EspressifSectorStatus, expected: UInt16) {
        self.sector = sector
        self.status = status
        self.expected = expected
    }

    /// The 20 bytes notified.
    public var encoded: Data {
        var payload = [UInt8](repeating: 0, count: 16)
        payload[0] = UInt8(truncatingIfNeeded: status.rawValue)
        payload[1] = UInt8(status.rawValue >> 8)
        payload[2] = UInt8(truncatingIfNeeded: expected)
        payload[3] = UInt8(expected >> 8)
        return EspressifFrame.seal(id: sector, payload: payload)
    }

    /// Decodes a notification: 20 bytes with a matching CRC; `nil` otherwise.
    public init?(decoding value: Data) {
        guard EspressifFrame.isSealed([UInt8](value)) else { return nil }
        var reader = ByteReader(value)
        guard let sector = reader.u16(), let status = reader.u16(), let expected = reader.u16() else { return nil }
        self.init(sector: sector, status: EspressifSectorStatus(rawValue: status), expected: expected)
    }

    /// "sector 3: CRC error, expects sector 3".
    public var description: String { "sector \(sector): \(status), expects sector \(expected)" }
}
