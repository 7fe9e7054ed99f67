import Foundation

/// The characteristic properties CoreBluetooth reports, as `CBCharacteristicProperties`.
public struct CBCharacteristicProperties: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let broadcast = CBCharacteristicProperties(rawValue: 0x01)
    public static let read = CBCharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = CBCharacteristicProperties(rawValue: 0x04)
    public static let write = CBCharacteristicProperties(rawValue: 0x08)
    public static let notify = CBCharacteristicProperties(rawValue: 0x10)
    public static let indicate = CBCharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = CBCharacteristicProperties(rawValue: 0x40)
    public static let extendedProperties = CBCharacteristicProperties(rawValue: 0x80)
    public static let notifyEncryptionRequired = CBCharacteristicProperties(rawValue: 0x100)
    public static let indicateEncryptionRequired = CBCharacteristicProperties(rawValue: 0x200)
}

/// An attribute of a peripheral's database, as `CBAttribute`.
open class CBAttribute: NSObject {
    let attributeUUID: CBUUID
    init(uuid: CBUUID) { attributeUUID = uuid }

    /// The attribute's UUID.
    open var uuid: CBUUID { attributeUUID }
}

/// A service of a peripheral, as `CBService`.
open class CBService: CBAttribute {
    var discoveredCharacteristics: [CBCharacteristic]?
    /// Set when Service Changed removed it: its characteristics no longer reach the device.
    var isInvalidated = false

    init(uuid: CBUUID, peripheral: CBPeripheral) {
        self.peripheral = peripheral
        super.init(uuid: uuid)
    }

    /// The peripheral it belongs to.
    public private(set) weak var peripheral: CBPeripheral?
    /// Whether it is a primary service (every stand-in service is).
    open var isPrimary: Bool { true }
    /// Included services: never discovered by the stand-in.
    open var includedServices: [CBService]? { nil }
    /// The characteristics, `nil` until `discoverCharacteristics(_:for:)` succeeded.
    open var characteristics: [CBCharacteristic]? { discoveredCharacteristics }
}

/// A characteristic of a service, as `CBCharacteristic`.
open class CBCharacteristic: CBAttribute {
    let declaredProperties: CBCharacteristicProperties
    var latestValue: Data?
    var notifying = false

    init(uuid: CBUUID, properties: CBCharacteristicProperties, service: CBService) {
        self.service = service
        declaredProperties = properties
        super.init(uuid: uuid)
    }

    /// The service it belongs to.
    public private(set) weak var service: CBService?
    /// What it allows.
    open var properties: CBCharacteristicProperties { declaredProperties }
    /// The latest value read or notified.
    open var value: Data? { latestValue }
    /// Descriptors: never discovered by the stand-in.
    open var descriptors: [CBDescriptor]? { nil }
    /// Whether notifications or indications are on.
    open var isNotifying: Bool { notifying }
}

/// A descriptor of a characteristic, as `CBDescriptor` (declared for signatures; the stand-in
/// discovers none).
open class CBDescriptor: CBAttribute {
    /// The characteristic it belongs to.
    public private(set) weak var characteristic: CBCharacteristic?
    /// Its value.
    open var value: Any? { nil }
}
