#if os(Linux)
import OTACore

extension ATTStatus {
    /// ATT "unlikely error" (0x0E): what BlueZ sends for a D-Bus error it does not know.
    static let unlikelyError = ATTStatus(rawValue: 0x0E)

    /// The D-Bus error a GATT application answers `WriteValue` or `ReadValue` with so that
    /// `bluetoothd` sends this status as the ATT error response.
    ///
    /// `bluetoothd` (`dbus_error_to_att_ecode` in `src/gatt-database.c`) knows a few error names,
    /// and takes an application error code from the message of `org.bluez.Error.Failed`:
    ///
    /// | ATT status | D-Bus error | ATT error BlueZ 5.66 sends |
    /// |---|---|---|
    /// | `0x02` on a read, `0x03` on a write | `org.bluez.Error.NotPermitted` | the same |
    /// | `0x06` request not supported | `org.bluez.Error.NotSupported` | `0x06` |
    /// | `0x07` invalid offset | `org.bluez.Error.InvalidOffset` | `0x07` |
    /// | `0x08` insufficient authorization | `org.bluez.Error.NotAuthorized` | `0x08` |
    /// | `0x0D` invalid attribute value length | `org.bluez.Error.InvalidValueLength` | `0x0D` |
    /// | `0x80`–`0x9F` application errors | `org.bluez.Error.Failed`, message `0x80`…`0x9F` | the same |
    /// | `0xFD` CCCD improperly configured | `org.bluez.Error.ImproperlyConfigured` | `0x0E` (newer BlueZ: `0xFD`) |
    /// | `0xFE` procedure already in progress | `org.bluez.Error.InProgress` | `0xFE` |
    /// | anything else | `org.bluez.Error.Failed`, message naming the status | `0x80` |
    ///
    /// - Important: BlueZ 5.66 answers a write to a characteristic that allows writes without
    ///   response at once, before the application replies, so errors reach the central only from
    ///   characteristics that allow writes with response alone.
    func bluezError(onRead: Bool) -> DBusError {
        let name: String
        var message = description
        switch rawValue {
        case ATTStatus.readNotPermitted.rawValue where onRead, ATTStatus.writeNotPermitted.rawValue where !onRead:
            name = "org.bluez.Error.NotPermitted"
        case ATTStatus.requestNotSupported.rawValue:
            name = "org.bluez.Error.NotSupported"
        case 0x07:
            name = "org.bluez.Error.InvalidOffset"
        case 0x08:
            name = "org.bluez.Error.NotAuthorized"
        case ATTStatus.invalidAttributeValueLength.rawValue:
            name = "org.bluez.Error.InvalidValueLength"
        case 0x80...0x9F:
            name = "org.bluez.Error.Failed"
            // bluetoothd parses the whole message with strtol: nothing may follow the number.
            message = Hex.number(rawValue)
        case ATTStatus.cccdImproperlyConfigured.rawValue:
            name = "org.bluez.Error.ImproperlyConfigured"
        case 0xFE:
            name = "org.bluez.Error.InProgress"
        default:
            name = "org.bluez.Error.Failed"
        }
        return DBusError(name: DBusError.Name(rawValue: name), message: message)
    }
}
#endif
