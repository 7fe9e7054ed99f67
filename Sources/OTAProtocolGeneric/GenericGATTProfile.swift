import OTACore

/// The GATT layout of the generic protocol: one service with an OTA Data characteristic (write
/// without response) and an OTA Control characteristic (write with response + notify).
///
/// The UUIDs can be changed to match a device's firmware; the defaults are this project's own
/// (documented in `docs/protocols/generic.md`).
public struct GenericGATTProfile: Sendable, Hashable {
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

    /// Reads `service-uuid`, `data-uuid` and `control-uuid` from `parameters`.
    public init(parameters: ProtocolParameters) throws(OTAError) {
        try parameters.validate(known: Self.parameterNames, protocolName: GenericProtocol.name)
        self.init(
            service: try parameters.uuid("service-uuid", default: Self.defaultService),
            dataCharacteristic: try parameters.uuid("data-uuid", default: Self.defaultData),
            controlCharacteristic: try parameters.uuid("control-uuid", default: Self.defaultControl)
        )
    }

    static let parameterNames = ["service-uuid", "data-uuid", "control-uuid"]

    /// OTA Data as a characteristic identifier.
    public var data: CharacteristicID { CharacteristicID(service: service, characteristic: dataCharacteristic) }
    /// OTA Control as a characteristic identifier.
    public var control: CharacteristicID { CharacteristicID(service: service, characteristic: controlCharacteristic) }
}
