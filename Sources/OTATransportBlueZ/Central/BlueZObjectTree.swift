#if os(Linux)
import Foundation
import OTACore

/// A snapshot of what BlueZ publishes: its adapters, the devices they know, and the GATT services
/// and characteristics of connected devices, parsed from `GetManagedObjects`.
///
/// Parsing is pure, so it can be tested without a bus:
///
/// ```swift
/// let reply = try await bus.call(.methodCall(
///     destination: BlueZ.serviceName, path: BlueZ.objectManagerPath,
///     interface: BlueZ.Interface.objectManager, member: "GetManagedObjects"))
/// let tree = try BlueZObjectTree(reply: reply)
/// let table = tree.gattCharacteristics(of: device.path)
/// ```
///
/// Objects with missing or malformed required properties (a device without `Address`, a
/// characteristic whose `UUID` does not parse) are left out rather than failing the whole tree.
public struct BlueZObjectTree: Sendable, Hashable {
    /// The `a{oa{sa{sv}}}` of `GetManagedObjects`: interfaces and their properties by object path.
    typealias ManagedObjects = [DBusObjectPath: [String: [String: DBusValue]]]

    /// The adapters, in name order (`hci0`, `hci1`, …, `hci10`).
    public var adapters: [BlueZAdapter]
    /// The remote devices BlueZ knows, in path order.
    public var devices: [Device]
    /// The GATT services of connected devices, in path order.
    public var services: [Service]
    /// The GATT characteristics of connected devices, in path order.
    public var characteristics: [Characteristic]
    /// The GATT descriptors of connected devices, in path order.
    public var descriptors: [Descriptor]

    /// A remote device (`org.bluez.Device1`).
    public struct Device: Sendable, Hashable {
        /// The object path, such as `/org/bluez/hci0/dev_00_AA_01_01_00_01`.
        public var path: DBusObjectPath
        /// The path of the adapter that knows the device.
        public var adapterPath: DBusObjectPath?
        /// The device address in upper case, such as `00:AA:01:01:00:01`.
        public var address: String
        /// `public` or `random`, when BlueZ says.
        public var addressType: String?
        /// The advertised or remote name, when known.
        public var name: String?
        /// BlueZ's display name (the name, or the address when there is none).
        public var alias: String?
        /// The signal strength of the last advertisement heard during discovery, in dBm.
        public var rssi: Int?
        /// The advertised transmit power, in dBm.
        public var txPower: Int?
        /// The service UUIDs, from advertisements or service discovery.
        public var serviceUUIDs: [GATTUUID]
        /// Manufacturer-specific data by company identifier.
        public var manufacturerData: [UInt16: Data]
        /// Service data by service UUID.
        public var serviceData: [GATTUUID: Data]
        /// Whether the device is connected.
        public var isConnected: Bool
        /// Whether BlueZ finished discovering the device's GATT services.
        public var isServicesResolved: Bool
        /// Whether the device is paired.
        public var isPaired: Bool

        /// Parses a device's `org.bluez.Device1` properties; `nil` without a valid `Address`.
        init?(path: DBusObjectPath, properties: [String: DBusValue]) {
            guard let address = properties["Address"]?.string, BlueZ.isValidAddress(address) else { return nil }
            self.path = path
            self.address = address.uppercased()
            adapterPath = properties["Adapter"]?.objectPath
            addressType = properties["AddressType"]?.string
            name = properties["Name"]?.string
            alias = properties["Alias"]?.string
            rssi = properties["RSSI"]?.int16.map(Int.init)
            txPower = properties["TxPower"]?.int16.map(Int.init)
            serviceUUIDs = (properties["UUIDs"]?.strings ?? []).compactMap(GATTUUID.init)
            var manufacturer: [UInt16: Data] = [:]
            for entry in properties["ManufacturerData"]?.entries ?? [] {
                if let company = entry.key.uint16, let bytes = entry.value.variant?.bytes {
                    manufacturer[company] = Data(bytes)
                }
            }
            manufacturerData = manufacturer
            var service: [GATTUUID: Data] = [:]
            for entry in properties["ServiceData"]?.entries ?? [] {
                if let uuid = entry.key.string.flatMap(GATTUUID.init), let bytes = entry.value.variant?.bytes {
                    service[uuid] = Data(bytes)
                }
            }
            serviceData = service
            isConnected = properties["Connected"]?.bool ?? false
            isServicesResolved = properties["ServicesResolved"]?.bool ?? false
            isPaired = properties["Paired"]?.bool ?? false
        }

        /// What the device advertises, as the engine and the device catalog see it.
        public var advertisement: Advertisement {
            Advertisement(name: name, serviceUUIDs: serviceUUIDs, manufacturerData: manufacturerData, rssi: rssi)
        }
    }

    /// A GATT service (`org.bluez.GattService1`).
    public struct Service: Sendable, Hashable {
        /// The object path, such as `/org/bluez/hci0/dev_00_AA_01_01_00_01/service000a`.
        public var path: DBusObjectPath
        /// The path of the device the service belongs to.
        public var devicePath: DBusObjectPath
        /// The service UUID.
        public var uuid: GATTUUID
        /// Whether it is a primary service.
        public var isPrimary: Bool

        /// Parses a service's properties; `nil` without a valid `UUID` and `Device`.
        init?(path: DBusObjectPath, properties: [String: DBusValue]) {
            guard case let (uuid, device)? = BlueZObjectTree.attribute(properties, of: "Device") else { return nil }
            self.path = path
            self.uuid = uuid
            devicePath = device
            isPrimary = properties["Primary"]?.bool ?? true
        }
    }

    /// A GATT characteristic (`org.bluez.GattCharacteristic1`).
    public struct Characteristic: Sendable, Hashable {
        /// The object path, such as `…/service000a/char000b`.
        public var path: DBusObjectPath
        /// The path of the service the characteristic belongs to.
        public var servicePath: DBusObjectPath
        /// The characteristic UUID.
        public var uuid: GATTUUID
        /// BlueZ's flags as given (`read`, `write`, `write-without-response`, `notify`, …).
        public var flags: [String]
        /// The flags as GATT properties.
        public var properties: CharacteristicProperties
        /// The ATT MTU of the link, when BlueZ reports it (5.62 and later).
        public var mtu: Int?
        /// Whether a client holds the characteristic through `AcquireWrite`; `nil` when BlueZ does
        /// not offer `AcquireWrite` for it.
        public var writeAcquired: Bool?
        /// Whether a client holds the characteristic through `AcquireNotify`; `nil` when not offered.
        public var notifyAcquired: Bool?
        /// Whether notifications or indications are enabled.
        public var isNotifying: Bool

        /// Parses a characteristic's properties; `nil` without a valid `UUID` and `Service`.
        init?(path: DBusObjectPath, properties: [String: DBusValue]) {
            guard case let (uuid, service)? = BlueZObjectTree.attribute(properties, of: "Service") else { return nil }
            self.path = path
            self.uuid = uuid
            servicePath = service
            flags = properties["Flags"]?.strings ?? []
            self.properties = Self.properties(fromFlags: flags)
            mtu = properties["MTU"]?.uint16.map(Int.init)
            writeAcquired = properties["WriteAcquired"]?.bool
            notifyAcquired = properties["NotifyAcquired"]?.bool
            isNotifying = properties["Notifying"]?.bool ?? false
        }

        /// The GATT properties BlueZ's flags stand for; flags without one (`reliable-write`,
        /// `authenticated-signed-writes`, …) are ignored.
        public static func properties(fromFlags flags: [String]) -> CharacteristicProperties {
            var properties: CharacteristicProperties = []
            for flag in flags {
                switch flag {
                case "read", "encrypt-read", "encrypt-authenticated-read", "secure-read": properties.insert(.read)
                case "write", "encrypt-write", "encrypt-authenticated-write", "secure-write": properties.insert(.write)
                case "write-without-response": properties.insert(.writeWithoutResponse)
                case "notify": properties.insert(.notify)
                case "indicate": properties.insert(.indicate)
                default: break
                }
            }
            return properties
        }
    }

    /// A GATT descriptor (`org.bluez.GattDescriptor1`).
    public struct Descriptor: Sendable, Hashable {
        /// The object path, such as `…/service000a/char000d/desc000f`.
        public var path: DBusObjectPath
        /// The path of the characteristic the descriptor belongs to.
        public var characteristicPath: DBusObjectPath
        /// The descriptor UUID (`00002902-…` for a Client Characteristic Configuration).
        public var uuid: GATTUUID

        /// The Client Characteristic Configuration descriptor's UUID (0x2902), which every
        /// characteristic that notifies or indicates has, and which every server lets be read.
        public static let clientCharacteristicConfiguration = GATTUUID("00002902-0000-1000-8000-00805f9b34fb")!

        /// Parses a descriptor's properties; `nil` without a valid `UUID` and `Characteristic`.
        init?(path: DBusObjectPath, properties: [String: DBusValue]) {
            guard case let (uuid, characteristic)? = BlueZObjectTree.attribute(properties, of: "Characteristic") else { return nil }
            self.path = path
            self.uuid = uuid
            characteristicPath = characteristic
        }
    }

    /// Parses the objects of `GetManagedObjects`.
    init(managedObjects: ManagedObjects) {
        let objects = managedObjects.sorted(by: { $0.key < $1.key })
        adapters = Self.parse(objects, BlueZ.Interface.adapter, as: BlueZAdapter.init(path:properties:)).sorted(by: BlueZAdapter.nameOrder)
        devices = Self.parse(objects, BlueZ.Interface.device, as: Device.init(path:properties:))
        services = Self.parse(objects, BlueZ.Interface.gattService, as: Service.init(path:properties:))
        characteristics = Self.parse(objects, BlueZ.Interface.gattCharacteristic, as: Characteristic.init(path:properties:))
        descriptors = Self.parse(objects, BlueZ.Interface.gattDescriptor, as: Descriptor.init(path:properties:))
    }

    /// A GATT attribute's `UUID` and the path of what it belongs to (its `parent` property:
    /// `Device`, `Service`, `Characteristic`); `nil` unless both are there and valid.
    private static func attribute(_ properties: [String: DBusValue], of parent: String) -> (GATTUUID, DBusObjectPath)? {
        guard let uuid = properties["UUID"]?.string.flatMap(GATTUUID.init), let path = properties[parent]?.objectPath else { return nil }
        return (uuid, path)
    }

    /// The objects, in the order given, that carry `interface` and whose properties `parse` takes.
    private static func parse<Object>(
        _ objects: [ManagedObjects.Element], _ interface: String, as parse: (DBusObjectPath, [String: DBusValue]) -> Object?
    ) -> [Object] {
        objects.compactMap { path, interfaces in interfaces[interface].flatMap { parse(path, $0) } }
    }

    /// Parses the reply to `GetManagedObjects`.
    ///
    /// - Throws: ``DBusError`` named ``DBusError/Name/invalidArgs`` when the reply is not an
    ///   `a{oa{sa{sv}}}`.
    init(reply: DBusMessage) throws {
        self.init(managedObjects: try reply.decode(ManagedObjects.self))
    }

    /// The adapter called `name` (`hci0`), if any.
    public func adapter(named name: String) -> BlueZAdapter? {
        adapters.first { $0.name == name }
    }

    /// The device with `address` (either case) known to the adapter at `adapterPath`, or to any
    /// adapter when `adapterPath` is `nil`.
    public func device(address: String, adapter adapterPath: DBusObjectPath? = nil) -> Device? {
        let wanted = address.uppercased()
        return devices.first { device in
            device.address == wanted
                && (adapterPath == nil || device.adapterPath == adapterPath
                    || adapterPath?.isAncestor(of: device.path) == true)
        }
    }

    /// The devices known to the adapter at `adapterPath`.
    public func devices(of adapterPath: DBusObjectPath) -> [Device] {
        devices.filter { $0.adapterPath == adapterPath || adapterPath.isAncestor(of: $0.path) }
    }

    /// The characteristics of the device at `devicePath`, by service and characteristic UUID.
    ///
    /// When a device exposes the same pair twice, the first by object path (the lower handle) wins.
    public func gattCharacteristics(of devicePath: DBusObjectPath) -> [CharacteristicID: Characteristic] {
        let servicesByPath = Dictionary(
            services.filter { $0.devicePath == devicePath }.map { ($0.path, $0) },
            uniquingKeysWith: { first, _ in first })
        var table: [CharacteristicID: Characteristic] = [:]
        for characteristic in characteristics {
            guard let service = servicesByPath[characteristic.servicePath] else { continue }
            let id = CharacteristicID(service: service.uuid, characteristic: characteristic.uuid)
            if table[id] == nil { table[id] = characteristic }
        }
        return table
    }

    /// The device's Client Characteristic Configuration descriptors (0x2902), by the
    /// characteristic they belong to, in path order (the lowest handle first).
    public func clientConfigurationDescriptors(
        of devicePath: DBusObjectPath
    ) -> [(characteristic: CharacteristicID, descriptor: Descriptor)] {
        let table = gattCharacteristics(of: devicePath)
        let ids = Dictionary(table.map { ($0.value.path, $0.key) }, uniquingKeysWith: { first, _ in first })
        return descriptors.compactMap { descriptor in
            guard descriptor.uuid == Descriptor.clientCharacteristicConfiguration,
                let id = ids[descriptor.characteristicPath]
            else { return nil }
            return (id, descriptor)
        }
    }
}
#endif
