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

    /// Lays out `definitions` below `root`, in order.
    init(root: DBusObjectPath, definitions: [GATTServiceDefinition]) {
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
    static func flags(for properties: CharacteristicProperties) -> [String] {
        let names: [(CharacteristicProperties, String)] = [
            (.read, "read"), (.writeWithoutResponse, "write-without-response"), (.write, "write"),
            (.notify, "notify"), (.indicate, "indicate"),
        ]
        return names.filter { properties.contains($0.0) }.map(\.1)
    }

    /// The properties of a service object.
    static func serviceProperties(_ service: Service) -> [String: [String: DBusValue]] {
        [serviceInterface: ["UUID": .string(service.uuid.description), "Primary": .bool(true)]]
    }

    /// The properties of a characteristic object.
    static func characteristicProperties(_ characteristic: Characteristic) -> [String: [String: DBusValue]] {
        [
            characteristicInterface: [
                "UUID": .string(characteristic.id.characteristic.description),
                "Service": .objectPath(characteristic.servicePath),
                "Flags": .strings(flags(for: characteristic.properties)),
            ]
        ]
    }
}
#endif
