#if os(Linux)
import OTACore

/// The object tree of a BlueZ GATT application made from a device model's services, as
/// `GattManager1.RegisterApplication` expects it (BlueZ's `doc/gatt-api.txt`):
///
/// ```text
/// <root>                          org.freedesktop.DBus.ObjectManager
/// <root>/service0                 org.bluez.GattService1         UUID, Primary
/// <root>/service0/char0           org.bluez.GattCharacteristic1  UUID, Service, Flags
/// <root>/service0/char1           …
/// <root>/advertisement0           org.bluez.LEAdvertisement1     (see ``LEAdvertisement``)
/// ```
///
/// The characteristics offer no `WriteAcquired` or `NotifyAcquired` property, so BlueZ delivers
/// every write, with or without response, through `WriteValue`, and notifications go through
/// `PropertiesChanged` of `Value`.
struct GATTApplication: Sendable {
    static let serviceInterface = "org.bluez.GattService1"
    static let characteristicInterface = "org.bluez.GattCharacteristic1"

    /// One exported service.
    struct Service: Sendable {
        var uuid: GATTUUID
        var path: DBusObjectPath
    }

    /// One exported characteristic.
    struct Characteristic: Sendable {
        var id: CharacteristicID
        var properties: CharacteristicProperties
        var path: DBusObjectPath
        var servicePath: DBusObjectPath
    }

    /// The object manager's path.
    let root: DBusObjectPath
    let services: [Service]
    let characteristics: [Characteristic]
    /// What link the characteristics' reads and writes need.
    let security: BlueZPeripheral.Security

    /// Lays out `definitions` below `root`, in order.
    init(root: DBusObjectPath, definitions: [GATTServiceDefinition], security: BlueZPeripheral.Security = .open) {
        self.security = security
        self.root = root
        var services: [Service] = []
        var characteristics: [Characteristic] = []
        for (serviceIndex, definition) in definitions.enumerated() {
            let servicePath = root.appending("service\(serviceIndex)")!
            services.append(Service(uuid: definition.uuid, path: servicePath))
            for (index, characteristic) in definition.characteristics.enumerated() {
                characteristics.append(
                    Characteristic(
                        id: CharacteristicID(service: definition.uuid, characteristic: characteristic.uuid),
                        properties: characteristic.properties,
                        path: servicePath.appending("char\(index)")!,
                        servicePath: servicePath
                    ))
            }
        }
        self.services = services
        self.characteristics = characteristics
    }

    /// The characteristic with identifier `id`, if the application has it.
    func characteristic(_ id: CharacteristicID) -> Characteristic? {
        characteristics.first { $0.id == id }
    }

    /// BlueZ's `Flags` for `properties`, in a fixed order.
    ///
    /// With a ``BlueZPeripheral/Security`` other than `open`, reads and writes (with or without
    /// response) need an encrypted link: `encrypt-read` and `encrypt-write` (or their
    /// `encrypt-authenticated-` forms) replace `read` and `write`. BlueZ has no flag for write
    /// commands alone, so a characteristic that takes only those gets `encrypt-write` as well, and
    /// takes writes with response from then on; bluetoothd drops a write command on an
    /// unencrypted link without a word, and answers a request with Insufficient Encryption.
    static func flags(for properties: CharacteristicProperties, security: BlueZPeripheral.Security = .open) -> [String] {
        let prefix: String? =
            switch security {
            case .open: nil
            case .encrypted: "encrypt-"
            case .authenticated: "encrypt-authenticated-"
            }
        var flags: [String] = []
        if properties.contains(.read) { flags.append((prefix ?? "") + "read") }
        if properties.contains(.writeWithoutResponse) { flags.append("write-without-response") }
        if properties.contains(.write) || (prefix != nil && properties.contains(.writeWithoutResponse)) {
            flags.append((prefix ?? "") + "write")
        }
        if properties.contains(.notify) { flags.append("notify") }
        if properties.contains(.indicate) { flags.append("indicate") }
        return flags
    }

    /// The properties of a service object.
    static func serviceProperties(_ service: Service) -> [String: [String: DBusValue]] {
        [serviceInterface: ["UUID": .string(service.uuid.description), "Primary": .bool(true)]]
    }

    /// The properties of a characteristic object.
    static func characteristicProperties(
        _ characteristic: Characteristic, security: BlueZPeripheral.Security = .open
    ) -> [String: [String: DBusValue]] {
        [
            characteristicInterface: [
                "UUID": .string(characteristic.id.characteristic.description),
                "Service": .objectPath(characteristic.servicePath),
                "Flags": .strings(flags(for: characteristic.properties, security: security)),
            ]
        ]
    }
}
#endif
