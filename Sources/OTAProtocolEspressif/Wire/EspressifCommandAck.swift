import Foundation
import OTACore

/// The device's answer to a command, notified on the command characteristic: command ID 0x0003,
/// the acknowledged command's ID, a status (0 accept, 1 reject) and, from `ble_ota_raw` after
/// START, a recommended send window (sectors the client may pipeline) in byte 6.
public struct EspressifCommandAck: Sendable, Hashable, CustomStringConvertible {
    /// The ID of the command this answers (0x0001 START, 0x0002 STOP).
    public var commandID: UInt16
    /// 0x0000 accepted, 0x0001 rejected; other values are kept so a message can name them.
    public var status: UInt16
    /// The recommended send window in sectors (`ble_ota_raw` START acknowledgements), else 0.
    public var window: UInt8

    /// The ACK frame's own command ID.
    public static let frameID: UInt16 = 0x0003

    /// Creates an acknowledgement.
    public init(commandID: UInt16, status: UInt16, window: UInt8 = 0) {
        self.commandID = commandID
        self.status = status
        self.window = window
    }

    /// Whether the device accepted the command.
    public var accepted: Bool { status == 0 }

    /// The 20 bytes notified.
    public var encoded: Data {
        var payload = [UInt8](repeating: 0, count: 16)
        payload[0] = UInt8(truncatingIfNeeded: commandID)
        payload[1] = UInt8(commandID >> 8)
        payload[2] = UInt8(truncatingIfNeeded: status)
        payload[3] = UInt8(status >> 8)
        payload[4] = window
        return EspressifFrame.seal(id: Self.frameID, payload: payload)
    }

    /// Decodes a notification: 20 bytes, ID 0x0003, a matching CRC; `nil` otherwise.
    public init?(decoding value: Data) {
        let bytes = [UInt8](value)
        guard EspressifFrame.isSealed(bytes) else { return nil }
        var reader = ByteReader(value)
        guard reader.u16() == Self.frameID, let commandID = reader.u16(), let status = reader.u16(), let window = reader.u8() else { return nil }
        self.init(commandID: commandID, status: status, window: window)
    }

    /// "ACK of 0x0001: accepted".
    public var description: String {
        "ACK of \(Hex.number(commandID, digits: 4)): " + (accepted ? "accepted" : status == 1 ? "rejected" : "status \(Hex.number(status, digits: 4))")
    }
}
