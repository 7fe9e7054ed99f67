import Foundation
import OTACore

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothStandIn
#endif

/// The one-line errors of the CoreBluetooth transport: CoreBluetooth's states, `CBError`s and
/// `CBATTError`s translated into ``TransportError``s that name the cause and the next step.
///
/// | CoreBluetooth | Kind | Next step in the message |
/// |---|---|---|
/// | state `.unauthorized` | `.connectionFailed` | allow Bluetooth in Settings › Privacy & Security › Bluetooth |
/// | state `.unsupported` | `.connectionFailed` | use a device with Bluetooth LE |
/// | state `.poweredOff` (past the connect time limit) | `.connectionFailed` | turn Bluetooth on |
/// | `CBError.peripheralDisconnected` (7) | `.disconnected` | (the engine resumes) |
/// | `CBError.connectionTimeout` (6) | `.disconnected` | move closer (the engine resumes) |
/// | `CBError.connectionFailed` (10), `unknownDevice` (12) | `.connectionFailed` | check range and power, scan again |
/// | `CBError.peerRemovedPairingInformation` (14), `encryptionTimedOut` (15) | `.connectionFailed` | forget the device in Settings and pair again |
/// | `CBATTError.writeNotPermitted` (3), ATT 253 | `.attError` | stale GATT cache: the device must send Service Changed, or toggle Bluetooth |
/// | `CBATTError.insufficientAuthentication`/`Encryption` | `.attError` | pair the device |
/// | other `CBATTError` | `.attError(code)` | — |
enum CoreBluetoothFailure {
    /// The domain and code of a CoreBluetooth error (bridged the same way on Darwin and on the
    /// stand-in).
    static func code(of error: any Error) -> (domain: String, code: Int) {
        let bridged = error as NSError
        return (bridged.domain, bridged.code)
    }

    /// Why Bluetooth cannot be used in `state`, with what to do, or `nil` when it is on.
    static func stateProblem(_ state: CBManagerState) -> String? {
        switch state {
        case .poweredOn: nil
        case .unauthorized:
            "the app is not allowed to use Bluetooth: allow it in Settings › Privacy & Security › Bluetooth (and declare NSBluetoothAlwaysUsageDescription)"
        case .unsupported: "this device has no Bluetooth LE: update from a phone, tablet or Mac that has it"
        case .poweredOff: "Bluetooth is off: turn it on in Settings or Control Centre"
        case .resetting: "Bluetooth is restarting: wait a moment and try again"
        case .unknown: "Bluetooth is not ready yet"
        @unknown default: "Bluetooth is in an unknown state (\(state.rawValue))"
        }
    }

    /// Whether a state cannot get better without the user (not allowed, not supported).
    static func isPermanent(_ state: CBManagerState) -> Bool {
        state == .unauthorized || state == .unsupported
    }

    /// The reason a link went down, from `didDisconnectPeripheral`'s error (`nil`: the app closed it).
    static func disconnectReason(_ error: (any Error)?) -> DisconnectReason {
        guard let error else { return .closedByApp }
        let (domain, code) = code(of: error)
        guard domain == CBErrorDomain else { return DisconnectReason("link lost (\(domain) \(code))") }
        switch CBError.Code(rawValue: code) {
        case .connectionTimeout?:
            return DisconnectReason("supervision timeout: the device went out of range or stopped answering (CBError 6)")
        case .peripheralDisconnected?:
            return DisconnectReason("the device closed the link (CBError 7 peripheralDisconnected)")
        case .connectionFailed?:
            return DisconnectReason("the link failed (CBError 10 connectionFailed)")
        default:
            return DisconnectReason("link lost (CBError \(code))")
        }
    }

    /// The failure of a connection attempt (`didFailToConnect`, or a `didDisconnectPeripheral`
    /// that ended it).
    static func connectFailure(_ error: (any Error)?, device: String) -> TransportError {
        guard let error else {
            return TransportError(.connectionFailed, "connecting to \(device) was cancelled")
        }
        let (domain, code) = code(of: error)
        if domain == CBErrorDomain {
            switch CBError.Code(rawValue: code) {
            case .peerRemovedPairingInformation?, .encryptionTimedOut?:
                return TransportError(
                    .connectionFailed,
                    "\(device) refused the pairing (CBError \(code)): forget the device in Settings › Bluetooth and pair it again")
            case .connectionLimitReached?:
                return TransportError(.connectionFailed, "too many Bluetooth connections (CBError 11): disconnect another accessory")
            case .unknownDevice?:
                return TransportError(.connectionFailed, "\(device) is unknown to this phone (CBError 12): scan for it again")
            default:
                break
            }
        }
        return TransportError(
            .connectionFailed,
            "could not connect to \(device) (\(domain) \(code)): check that it is in range, powered and not connected to another phone")
    }

    /// The failure of a read, a write with response or a notification change.
    static func operationFailure(_ error: any Error, _ operation: String, _ characteristic: CharacteristicID) -> TransportError {
        let (domain, code) = code(of: error)
        guard domain == CBATTErrorDomain else {
            return TransportError(.other, "\(operation) of \(characteristic.characteristic) failed (\(domain) \(code))")
        }
        let status = UInt8(truncatingIfNeeded: code)
        let hint: String
        switch CBATTError.Code(rawValue: code) {
        case .writeNotPermitted?, .invalidHandle?:
            hint =
                ": if the firmware just changed, iOS's GATT cache may be stale — the device must send Service Changed, or toggle Bluetooth"
        case .insufficientAuthentication?, .insufficientEncryption?, .insufficientEncryptionKeySize?:
            hint = ": the device wants to be paired first"
        case .invalidAttributeValueLength?:
            hint = ": the value is longer than the device takes"
        default:
            hint = code == 253 ? ": iOS's GATT cache is probably stale — toggle Bluetooth or have the device send Service Changed" : ""
        }
        return TransportError(.attError(status), "device answered the \(operation) with ATT error 0x\(Hex.digits(status, digits: 2))\(hint)")
    }

    static let cancelled = TransportError(.other, "cancelled")
}
