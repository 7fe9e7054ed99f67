#if os(Linux)
import OTACore

/// Names and limits of BlueZ, the Linux Bluetooth stack, as seen over D-Bus.
///
/// `bluetoothd` owns the bus name ``serviceName`` on the system bus and publishes every adapter,
/// device, GATT service and characteristic as an object under its object manager at `/`
/// (`/org/bluez/hci0`, `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`, `…/service0010/char0011`).
///
/// The central side of this module is built from:
/// - ``BlueZObjectTree``: a parsed snapshot of those objects (pure, no bus);
/// - ``BlueZAdapter``: listing and choosing an adapter, with one-line errors;
/// - ``BlueZScanner``: discovery as a stream of advertisements;
/// - ``BlueZConnector`` and ``BlueZTransport``: a ``Connector`` and the ``Transport`` it opens;
/// - ``BlueZDoctor``: what is installed, running and powered, and how to fix what is not.
public enum BlueZ {
    /// The bus name `bluetoothd` owns: `org.bluez`.
    public static let serviceName = "org.bluez"

    /// The path of BlueZ's object manager: `/`.
    public static let objectManagerPath: DBusObjectPath = .root
    /// Where bluetoothd's `AgentManager1` lives.
    public static let agentManagerPath: DBusObjectPath = "/org/bluez"

    /// The D-Bus interfaces BlueZ's objects implement.
    public enum Interface {
        /// A local controller, such as `hci0`.
        public static let adapter = "org.bluez.Adapter1"
        /// A remote device, known from discovery or a previous connection.
        public static let device = "org.bluez.Device1"
        /// A GATT service of a connected device.
        public static let gattService = "org.bluez.GattService1"
        /// A GATT characteristic of a connected device.
        public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
        /// A pairing agent, exported by an application (``BlueZPairingAgent``).
        public static let agent = "org.bluez.Agent1"
        /// bluetoothd's registry of pairing agents.
        public static let agentManager = "org.bluez.AgentManager1"
        /// A GATT descriptor of a connected device's characteristic.
        public static let gattDescriptor = "org.bluez.GattDescriptor1"
        /// The standard properties interface (`Get`, `GetAll`, `PropertiesChanged`).
        public static let properties = "org.freedesktop.DBus.Properties"
        /// The standard object manager interface (`GetManagedObjects`, `InterfacesAdded`, `InterfacesRemoved`).
        public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    }

    /// The largest value a write without response may carry when the peer is a BlueZ peripheral:
    /// 510 bytes.
    ///
    /// Measured with BlueZ 5.66 at ATT MTU 517 (see `bluez-vm/README.md`): write commands of 512
    /// and 514 bytes (MTU − 3) were silently lost, over `WriteValue(type: command)` and over an
    /// `AcquireWrite` socket alike, while 510 bytes always arrived. A BlueZ peripheral of that age
    /// counts the 2-byte handle against the 512-byte attribute limit (bluez/bluez#570). This is
    /// the default of ``BlueZConnector/Configuration/writeWithoutResponseCap``.
    public static let bluezPeerWriteWithoutResponseCap = 510

    /// The largest attribute value bluetoothd carries in one write: 512 bytes.
    ///
    /// The ATT maximum attribute length; bluetoothd also reads each `AcquireWrite` datagram into a
    /// 512-byte buffer and cuts anything longer (bluez/bluez#1466). Use it as
    /// ``BlueZConnector/Configuration/writeWithoutResponseCap`` for peers that are not BlueZ
    /// peripherals; writes with response are always capped here.
    public static let attributeValueCap = 512

    /// The link limits for a negotiated ATT MTU: every write carries at most MTU − 3 bytes, writes
    /// without response at most `writeWithoutResponseCap`, writes with response at most
    /// ``attributeValueCap``.
    ///
    /// ```swift
    /// BlueZ.linkParameters(attMTU: 517, writeWithoutResponseCap: 510)  // 510 / 512
    /// BlueZ.linkParameters(attMTU: 247, writeWithoutResponseCap: 510)  // 244 / 244
    /// ```
    public static func linkParameters(
        attMTU: Int, writeWithoutResponseCap: Int, summary: String? = nil
    )
        -> LinkParameters
    {
        let mtu = max(23, attMTU)
        return LinkParameters(
            attMTU: mtu,
            maximumWriteWithoutResponse: min(mtu - 3, max(1, writeWithoutResponseCap)),
            maximumWriteWithResponse: min(mtu - 3, attributeValueCap),
            summary: summary
        )
    }

    /// Whether `text` is a Bluetooth device address written as six hexadecimal bytes separated by
    /// colons, such as `00:AA:01:01:00:01` (either case).
    public static func isValidAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }
}
#endif
