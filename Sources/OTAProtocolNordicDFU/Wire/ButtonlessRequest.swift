import Foundation
import OTACore

/// A request to the buttonless DFU characteristic of an application (nRF5 SDK `ble_dfu`), and
/// its indicated response `20 op status`.
public enum ButtonlessRequest: Sendable, Hashable {
    /// `01`: restart into the bootloader.
    case enterBootloader
    /// `02 len name`: the name the bootloader will advertise (1…20 bytes).
    case setAdvertisingName(String)

    /// The bytes on the wire.
    public var encoded: Data {
        switch self {
        case .enterBootloader: Data([0x01])
        case .setAdvertisingName(let name): Data([0x02, UInt8(name.utf8.count)]) + Data(name.utf8)
        }
    }

    /// The op code.
    public var opCode: UInt8 {
        switch self {
        case .enterBootloader: 0x01
        case .setAdvertisingName: 0x02
        }
    }

    /// Parses a request, as the application does.
    public init?(decoding data: Data) {
        let bytes = [UInt8](data)
        switch bytes.first {
        case 0x01 where bytes.count == 1: self = .enterBootloader
        case 0x02 where bytes.count >= 3 && Int(bytes[1]) == bytes.count - 2 && bytes.count - 2 <= 20:
            guard let name = String(bytes: bytes[2...], encoding: .utf8) else { return nil }
            self = .setAdvertisingName(name)
        default: return nil
        }
    }

    /// Statuses in the response: 01 success, 02 op not supported, 04 operation failed, 05 invalid
    /// advertising name, 06 busy, 07 not bonded.
    public static func statusMeaning(_ status: UInt8) -> String {
        switch status {
        case 0x01: "success"
        case 0x02: "op code not supported"
        case 0x04: "operation failed"
        case 0x05: "invalid advertising name"
        case 0x06: "busy"
        case 0x07: "not bonded"
        default: "unknown status 0x\(Hex.digits(status, uppercase: false))"
        }
    }
}

/// Where a bootloader entered through buttonless DFU advertises: a bootloader built without bond
/// support adds one to the lowest byte of the device address (no carry); clients also look for
/// the advertising name they set.
public enum BootloaderAddress {
    /// "C0:FF:EE:00:00:10" → "C0:FF:EE:00:00:11"; "…:FF" → "…:00". `nil` for a malformed address.
    public static func next(after address: String) -> String? {
        var octets = address.split(separator: ":").map(String.init)
        guard octets.count == 6, octets.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }), let last = octets.last, let value = UInt8(last, radix: 16)
        else {
            return nil
        }
        octets[5] = Hex.digits(value &+ 1, digits: 2)
        return octets.joined(separator: ":")
    }

    /// How to find the bootloader of the device at `address` after a buttonless jump: at the
    /// same address (a bootloader that shares the application's bonds) or the next (one without
    /// bonds, and the SDK 12/13 style), advertising `advertisedName` when the application set one.
    /// A transport that does not see addresses (`nil`) finds it by the name alone; `nil` when
    /// neither is known, and the client reconnects to the device as it was reached.
    public static func reappearance(of address: String?, advertisedName: String?) -> ReappearanceRule? {
        var addresses: [String] = []
        if let address {
            addresses.append(address.uppercased())
            if let next = next(after: address) { addresses.append(next.uppercased()) }
        }
        guard !addresses.isEmpty || advertisedName != nil else { return nil }
        return ReappearanceRule(addresses: addresses, name: advertisedName)
    }
}
