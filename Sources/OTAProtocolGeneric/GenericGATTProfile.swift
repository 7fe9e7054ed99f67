import OTACore

/// The GATT layout of the generic protocol: one service with an OTA Data characteristic (write
/// without response) and an OTA Control characteristic (write with response + notify).
///
/// The UUIDs can be changed to match a device's firmware; the defaults are this project's own
/// (documented in `docs/protocols/generic.md`).
public struct GenericGATTProfile: ProtocolConfiguration, Hashable {
    /// The OTA service.
    public var service: GATTUUID
    /// OTA Data: firmware bytes, written without response.
    public var dataCharacteristic: GATTUUID
    /// OTA Control: START / COMMIT / ABORT written with response; replies notified.
    public var controlCharacteristic: GATTUUID

    /// Default service UUID `4f544100-8a2e-4c1b-9f3d-2b7e5c6a0001`.
    public static let defaultService = GATTUUID("4f544100-8a2e-4c1b-9f3d-2b7e5c6a0001")!
    /// Default OTA Data UUID `4f544101-8a2e-4c1b-9f3d-2b7e5c6a0001`.
    public static let defaultData = GATTUUID("4f544101-8a2e-4c1b-9f3d-2b7e5c6a0001")!
    /// Default OTA Control UUID `4f544102-8a2e-4c1b-9f3d-2b7e5c6a0001`.
    public static let defaultControl = GATTUUID("4f544102-8a2e-4c1b-9f3d-2b7e5c6a0001")!

    /// Creates a profile; the defaults are the documented UUIDs.
    public init(
        service: GATTUUID = Self.defaultService,
        dataCharacteristic: GATTUUID = Self.defaultData,
        controlCharacteristic: GATTUUID = Self.defaultControl
    ) {
        self.service = service
        self.dataCharacteristic = dataCharacteristic
        self.controlCharacteristic = controlCharacteristic
    }

    /// `service-uuid`: the OTA service.
    public static let serviceParameter = ProtocolParameter.uuid("service-uuid", summary: "OTA service UUID", default: defaultService)
    /// `data-uuid`: the OTA Data characteristic.
    public static let dataParameter = ProtocolParameter.uuid(
        "data-uuid", summary: "OTA Data characteristic, write without response", default: defaultData
    )
    /// `control-uuid`: the OTA Control characteristic.
    public static let controlParameter = ProtocolParameter.uuid(
        "control-uuid", summary: "OTA Control characteristic, write + notify", default: defaultControl
    )
    /// The parameters the profile reads, in the order `ota protocols` lists them.
    public static let parameters = [serviceParameter.spec, dataParameter.spec, controlParameter.spec]

    /// `generic`: the profile is all the generic protocol's configuration.
    public static var protocolName: String { GenericProtocol.name }

    /// Reads `service-uuid`, `data-uuid` and `control-uuid` from `reader`, which must have been
    /// made with ``parameters`` among its declarations.
    public init(reading reader: ProtocolParameterReader) throws(OTAError) {
        self.init(
            service: try reader.value(Self.serviceParameter),
            dataCharacteristic: try reader.value(Self.dataParameter),
            controlCharacteristic: try reader.value(Self.controlParameter)
        )
    }

    /// OTA Data as a characteristic identifier.
    public var data: CharacteristicID { CharacteristicID(service: service, characteristic: dataCharacteristic) }
    /// OTA Control as a characteristic identifier.
    public var control: CharacteristicID { CharacteristicID(service: service, characteristic: controlCharacteristic) }
}
