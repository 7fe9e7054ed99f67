#if os(Linux)
import OTACore

/// The one-line errors of the BlueZ central, and the translation of BlueZ's D-Bus errors into
/// ``TransportError``s that name the cause and the next step.
///
/// | D-Bus error | Kind | Next step in the message |
/// |---|---|---|
/// | `…DBus.Error.ServiceUnknown`, `…NameHasNoOwner` | `.connectionFailed` | start bluetoothd |
/// | `…DBus.Error.AccessDenied` | `.notPermitted` | run as root or join the `bluetooth` group |
/// | `…DBus.Error.NoReply` | `.other` (`.connectionFailed` while connecting) | check range, power |
/// | `…DBus.Error.Disconnected`, `org.bluez.Error.NotConnected` | `.disconnected` | (resume) |
/// | `…DBus.Error.UnknownObject`, `…UnknownMethod`, `org.bluez.Error.DoesNotExist` | `.connectionFailed` | scan again |
/// | `org.bluez.Error.NotPermitted` "Not paired" (ATT insufficient authentication/encryption) | `.notPermitted` | `--pair`, `--passkey`, or bluetoothctl |
/// | `org.bluez.Error.NotPermitted` otherwise | `.notPermitted` | close other clients holding it |
/// | `org.bluez.Error.NotAuthorized`, `…AuthenticationFailed`/`Rejected`/`Canceled`/`Timeout` | `.notPermitted` / `.connectionFailed` | pair, or remove and pair again |
/// | `org.bluez.Error.InProgress` | `.other` | wait, or disconnect other clients |
/// | `org.bluez.Error.NotSupported` | `.notPermitted` | — |
/// | `org.bluez.Error.InvalidValueLength` | `.attError(0x0D)` | use a smaller chunk size |
/// | `org.bluez.Error.InvalidOffset` | `.attError(0x07)` | — |
/// | `org.bluez.Error.NotReady` | `.connectionFailed` | power the adapter on |
/// | `org.bluez.Error.Failed` with "ATT error: 0x…" | `.attError(code)` | — |
/// | `org.bluez.Error.Failed` otherwise | `.other` (`.connectionFailed` while connecting) | check range, power |
enum BlueZFailure {
    /// What the failing call was doing, for the message and for the kind of error.
    struct Context: Sendable {
        /// What was being done, such as "connecting to 00:AA:01:01:00:01".
        var operation: String
        /// The bus the call went to.
        var bus: DBusConnection.Bus
        /// The device address, for `bluetoothctl` hints.
        var address: String?
        /// Whether the call is part of connecting (failures are then `.connectionFailed`).
        var isConnecting = false
        /// How long the call was given, for timeouts.
        var timeout: Duration?
    }

    /// How a bus is named in messages.
    static func describe(_ bus: DBusConnection.Bus) -> String {
        switch bus {
        case .system: "the system bus"
        case .session: "the session bus"
        case .address(let address): "the D-Bus bus at \(address)"
        }
    }

    static func bluetoothdNotRunning(on bus: DBusConnection.Bus) -> TransportError {
        TransportError(
            .connectionFailed,
            "bluetoothd is not running (org.bluez is not on \(describe(bus))): start it with 'systemctl start bluetooth'"
        )
    }

    static func busUnreachable(_ bus: DBusConnection.Bus, _ error: any Error) -> TransportError {
        if let missing = error as? DBusLibraryUnavailable { return TransportError(.connectionFailed, missing.description) }
        let cause = busCause(error)
        return TransportError(
            .connectionFailed,
            "cannot reach \(describe(bus)) (\(cause)): is dbus running? Check with 'systemctl status dbus'")
    }

    /// Why the bus could not be reached, without a hint: what libdbus said.
    static func busCause(_ error: any Error) -> String {
        (error as? DBusError).map { $0.message.isEmpty ? $0.name.rawValue : $0.message } ?? "\(error)"
    }

    static func noAdapter() -> TransportError {
        TransportError(
            .connectionFailed,
            "no Bluetooth adapter: bluetoothd runs but sees no controller; plug one in or check 'rfkill list' and 'dmesg | grep -i bluetooth'"
        )
    }

    static func unknownAdapter(_ name: String, available: [BlueZAdapter]) -> TransportError {
        let names = available.map(\.name).joined(separator: ", ")
        return TransportError(
            .connectionFailed,
            "no Bluetooth adapter named '\(name)' (adapters: \(names)); list them with 'bluetoothctl list'")
    }

    static func poweredOff(_ adapter: BlueZAdapter, among adapters: [BlueZAdapter]) -> TransportError {
        let (problem, fix) = poweredOffFinding(adapter, among: adapters)
        return TransportError(.connectionFailed, "\(problem): \(fix)")
    }

    /// What is wrong with an adapter that is off, and the fix.
    static func poweredOffFinding(
        _ adapter: BlueZAdapter, among adapters: [BlueZAdapter]
    ) -> (
        problem: String, fix: String
    ) {
        if adapter.powerState == "off-blocked" {
            return (
                "\(adapter.name) is blocked by rfkill", "run 'rfkill unblock bluetooth', then 'bluetoothctl power on'"
            )
        }
        let fix =
            adapters.count > 1
            ? "run 'bluetoothctl' and enter 'select \(adapter.address)' then 'power on'"
            : "run 'bluetoothctl power on'"
        return ("\(adapter.name) is powered off", fix)
    }

    static func invalidAddress(_ address: String) -> TransportError {
        TransportError(
            .connectionFailed, "'\(address)' is not a Bluetooth address: write six hex bytes such as 00:AA:01:01:00:01")
    }

    static func deviceNotFound(_ address: String, adapter: String, after duration: Duration) -> TransportError {
        TransportError(
            .connectionFailed,
            "no device \(address) was found by \(adapter) in \(duration.humanReadable) of scanning: is it powered, advertising and in range? ('bluetoothctl scan le' lists what is heard)"
        )
    }

    static func cancelled(_ operation: String) -> TransportError {
        TransportError(.other, "\(operation): cancelled")
    }

    /// Translates an error thrown by a D-Bus call to BlueZ.
    static func translate(_ error: any Error, _ context: Context) -> TransportError {
        if let error = error as? TransportError { return error }
        if error is CancellationError { return cancelled(context.operation) }
        guard let error = error as? DBusError else {
            return TransportError(.other, "\(context.operation): \(error)")
        }
        let operation = context.operation
        let detail = error.message.isEmpty ? error.name.rawValue : error.message
        let pairHint =
            "pass --pairing first (or --passkey NNNNNN if the device expects one), or pair it first with 'bluetoothctl pair \(context.address ?? "<address>")'"
        let failedKind: TransportError.Kind = context.isConnecting ? .connectionFailed : .other
        switch error.name.rawValue {
        case DBusError.Name.serviceUnknown.rawValue, DBusError.Name.nameHasNoOwner.rawValue:
            return bluetoothdNotRunning(on: context.bus)
        case DBusError.Name.accessDenied.rawValue:
            return TransportError(
                .notPermitted,
                "\(operation): the D-Bus policy denied access to org.bluez (\(detail)): run as root or add the user to the 'bluetooth' group"
            )
        case DBusError.Name.noReply.rawValue:
            let limit = context.timeout.map { " within \($0.humanReadable)" } ?? ""
            return TransportError(
                failedKind,
                "\(operation): bluetoothd did not answer\(limit): is the device powered and in range? If it keeps happening, restart bluetoothd ('systemctl restart bluetooth')"
            )
        case DBusError.Name.disconnected.rawValue:
            return .disconnected(
                DisconnectReason(
                    error == .connectionClosed ? "closed by the app" : "the D-Bus connection to bluetoothd was lost",
                    isLocal: error == .connectionClosed))
        case "org.bluez.Error.NotConnected":
            return .disconnected(DisconnectReason("the device is not connected"))
        case DBusError.Name.unknownObject.rawValue, DBusError.Name.unknownMethod.rawValue,
            "org.bluez.Error.DoesNotExist":
            return TransportError(
                .connectionFailed,
                "\(operation): BlueZ has no such object or method (\(detail)): the device was removed or disconnected, or this BlueZ is too old for the call; scan and connect again"
            )
        case "org.bluez.Error.NotPermitted" where detail == "Not paired":
            // gatt-client.c's answer to ATT Insufficient Authentication/Encryption/Key Size.
            return TransportError(
                .notPermitted,
                "\(operation): the device requires a paired, encrypted link and pairing did not happen or failed; \(pairHint)")
        case "org.bluez.Error.NotPermitted":
            return TransportError(
                .notPermitted,
                "\(operation): not permitted by BlueZ (\(detail)): the characteristic does not allow it, or another program holds it; close other Bluetooth clients"
            )
        case "org.bluez.Error.NotAuthorized":
            return TransportError(
                .notPermitted,
                "\(operation): not authorized (\(detail)): the device requires a paired, encrypted link; \(pairHint)")
        case "org.bluez.Error.AuthenticationFailed", "org.bluez.Error.AuthenticationRejected",
            "org.bluez.Error.AuthenticationCanceled", "org.bluez.Error.AuthenticationTimeout":
            return TransportError(
                .connectionFailed,
                "\(operation): pairing failed (\(detail)): check the passkey (--passkey), or remove the device with 'bluetoothctl remove \(context.address ?? "<address>")' and pair again"
            )
        case "org.bluez.Error.InProgress":
            return TransportError(
                .other,
                "\(operation): another operation is already in progress (\(detail)): wait for it to finish, or disconnect other clients of the device"
            )
        case "org.bluez.Error.NotSupported":
            return TransportError(
                .notPermitted, "\(operation): not supported by the device or by this BlueZ version (\(detail))")
        case "org.bluez.Error.InvalidValueLength":
            return TransportError(
                .attError(0x0D),
                "\(operation): the device rejected the value's length (ATT 0x0D, \(detail)): use a smaller chunk size")
        case "org.bluez.Error.InvalidOffset":
            return TransportError(.attError(0x07), "\(operation): the device rejected the offset (ATT 0x07, \(detail))")
        case "org.bluez.Error.NotReady":
            return TransportError(
                .connectionFailed,
                "\(operation): the adapter is not ready (\(detail)): power it on with 'bluetoothctl power on'")
        case "org.bluez.Error.Failed":
            let mapped = error.transportError
            if case .attError = mapped.kind {
                return TransportError(mapped.kind, "\(operation): the device answered with an error (\(detail))")
            }
            let hint = context.isConnecting ? ": is the device powered, advertising and in range?" : ""
            return TransportError(failedKind, "\(operation) failed: \(detail)\(hint)")
        default:
            let mapped = error.transportError
            let kind: TransportError.Kind =
                context.isConnecting && mapped.kind == .other ? .connectionFailed : mapped.kind
            return TransportError(kind, "\(operation): \(error)")
        }
    }
}
#endif
