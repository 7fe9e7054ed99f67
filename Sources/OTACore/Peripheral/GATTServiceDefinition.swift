/// A GATT service a device model exposes.
public struct GATTServiceDefinition: Sendable, Hashable {
    /// The service UUID.
    public var uuid: GATTUUID
    /// Its characteristics.
    public var characteristics: [Characteristic]

    /// One characteristic of the service.
    public struct Characteristic: Sendable, Hashable {
        /// The characteristic UUID.
        public var uuid: GATTUUID
        /// What it allows.
        public var properties: CharacteristicProperties

        /// Creates a characteristic definition.
        public init(uuid: GATTUUID, properties: CharacteristicProperties) {
            self.uuid = uuid
            self.properties = properties
        }
    }

    /// Creates a service definition.
    public init(uuid: GATTUUID, characteristics: [Characteristic]) {
        self.uuid = uuid
        self.characteristics = characteristics
    }

    /// The characteristics as identifiers with properties.
    public var characteristicTable: [CharacteristicID: CharacteristicProperties] {
        var table: [CharacteristicID: CharacteristicProperties] = [:]
        for characteristic in characteristics {
            table[CharacteristicID(service: uuid, characteristic: characteristic.uuid)] = characteristic.properties
        }
        return table
    }
}
