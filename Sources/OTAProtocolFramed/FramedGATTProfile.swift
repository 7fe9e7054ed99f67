import OTACore

/// The GATT layout of the framed protocol: Data, Control and Status in one service.
public struct FramedGATTProfile: Sendable, Hashable {
    /// The service.
    public var service: GATTUUID
    /// Data: chunks, written without response.
    public var dataCharacteristic: GATTUUID
    /// Control: commands written with response; replies, ACKs and NAKs notified.
    public var controlCharacteristic: GATTUUID
    /// Status: read on connect.
    public var statusCharacteristic: GATTUUID

    /// `4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001`.
    public static let defaultService = GATTUUID("4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001")!
    /// `4f544201-8a2e-4c1b-9f3d-2b7e5c6a0001`.
    public static let defaultData = GATTUUID("4f544201-8a2e-4c1b-9f3d-2b7e5c6a0001")!
    /// `4f544202-8a2e-4c1b-9f3d-2b7e5c6a0001`.
    public static let defaultControl = GATTUUID("4f544202-8a2e-4c1b-9f3d-2b7e5c6a0001")!
    /// `4f544203-8a2e-4c1b-9f3d-2b7e5c6a0001`.
    public static let defaultStatus = GATTUUID("4f544203-8a2e-4c1b-9f3d-2b7e5c6a0001")!

    /// Creates a profile with the documented defaults.
    public init(
        service: GATTUUID = Self.defaultService,
        dataCharacteristic: GATTUUID = Self.defaultData,
        controlCharacteristic: GATTUUID = Self.defaultControl,
        statusCharacteristic: GATTUUID = Self.defaultStatus
    ) {
        self.service = service
        self.dataCharacteristic = dataCharacteristic
        self.controlCharacteristic = controlCharacteristic
        self.statusCharacteristic = statusCharacteristic
    }

    /// `service-uuid`: the service.
    public static let serviceParameter = ProtocolParameter.uuid("service-uuid", summary: "service UUID", default: defaultService)
    /// `data-uuid`: the Data characteristic.
    public static let dataParameter = ProtocolParameter.uuid("data-uuid", summary: "Data characteristic", default: defaultData)
    /// `control-uuid`: the Control characteristic.
    public static let controlParameter = ProtocolParameter.uuid("control-uuid", summary: "Control characteristic", default: defaultControl)
    /// `status-uuid`: the Status characteristic.
    public static let statusParameter = ProtocolParameter.uuid("status-uuid", summary: "Status characteristic", default: defaultStatus)
    /// The parameters the profile reads, in the order `ota protocols` lists them.
    public static let parameters = [serviceParameter.spec, dataParameter.spec, controlParameter.spec, statusParameter.spec]

    /// Reads the profile's parameters from `reader`, which must have been made with
    /// ``parameters`` among its declarations.
    public init(reading reader: ProtocolParameterReader) throws(OTAError) {
        self.init(
            service: try reader.value(Self.serviceParameter),
            dataCharacteristic: try reader.value(Self.dataParameter),
            controlCharacteristic: try reader.value(Self.controlParameter),
            statusCharacteristic: try reader.value(Self.statusParameter)
        )
    }

    /// Data as an identifier.
    public var data: CharacteristicID { CharacteristicID(service: service, characteristic: dataCharacteristic) }
    /// Control as an identifier.
    public var control: CharacteristicID { CharacteristicID(service: service, characteristic: controlCharacteristic) }
    /// Status as an identifier.
    public var status: CharacteristicID { CharacteristicID(service: service, characteristic: statusCharacteristic) }

    /// The service definition a device exposes.
    public var serviceDefinition: GATTServiceDefinition {
        GATTServiceDefinition(
            uuid: service,
            characteristics: [
                .init(uuid: dataCharacteristic, properties: .writeWithoutResponse),
                .init(uuid: controlCharacteristic, properties: [.write, .notify]),
                .init(uuid: statusCharacteristic, properties: .read),
            ]
        )
    }
}
