import OTACore

/// The GATT layout of Espressif's `ble_ota` component: service 0x8018 with the firmware
/// characteristic (0x8020: packets in, sector acknowledgements out) and the command
/// characteristic (0x8022: START/STOP in, their acknowledgements out). The component also
/// declares a progress (0x8021) and a customer (0x8023) characteristic, which updates do not use.
public struct EspressifGATTProfile: Sendable, Hashable {
    /// The OTA service.
    public var service: GATTUUID
    /// RECV_FW_CHAR: firmware packets, sector acknowledgements.
    public var firmwareCharacteristic: GATTUUID
    /// COMMAND_CHAR: START and STOP, their acknowledgements.
    public var commandCharacteristic: GATTUUID

    /// The service, `8018`.
    public static let defaultService = GATTUUID("8018")!
    /// RECV_FW_CHAR, `8020`.
    public static let defaultFirmware = GATTUUID("8020")!
    /// PROGRESS_BAR_CHAR, `8021` (declared by the device model, unused by the client).
    public static let progressCharacteristic = GATTUUID("8021")!
    /// COMMAND_CHAR, `8022`.
    public static let defaultCommand = GATTUUID("8022")!
    /// CUSTOMER_CHAR, `8023` (declared by the device model, unused by the client).
    public static let customerCharacteristic = GATTUUID("8023")!

    /// Creates a profile; the defaults are the component's UUIDs.
    public init(
        service: GATTUUID = Self.defaultService,
        firmwareCharacteristic: GATTUUID = Self.defaultFirmware,
        commandCharacteristic: GATTUUID = Self.defaultCommand
    ) {
        self.service = service
        self.firmwareCharacteristic = firmwareCharacteristic
        self.commandCharacteristic = commandCharacteristic
    }

    /// `service-uuid`: the OTA service.
    public static let serviceParameter = ProtocolParameter.uuid("service-uuid", summary: "OTA service UUID", default: defaultService)
    /// `firmware-uuid`: RECV_FW_CHAR.
    public static let firmwareParameter = ProtocolParameter.uuid(
        "firmware-uuid", summary: "firmware characteristic (packets in, sector ACKs out)", default: defaultFirmware)
    /// `command-uuid`: COMMAND_CHAR.
    public static let commandParameter = ProtocolParameter.uuid(
        "command-uuid", summary: "command characteristic (START/STOP in, their ACKs out)", default: defaultCommand)
    /// The GATT parameters, in the order `ota protocols` lists them.
    public static let parameters = [serviceParameter.spec, firmwareParameter.spec, commandParameter.spec]

    /// Reads `service-uuid`, `firmware-uuid` and `command-uuid` from `reader`.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a value that is not a UUID.
    init(reader: ProtocolParameterReader) throws(OTAError) {
        self.init(
            service: try reader.value(Self.serviceParameter),
            firmwareCharacteristic: try reader.value(Self.firmwareParameter),
            commandCharacteristic: try reader.value(Self.commandParameter)
        )
    }

    /// RECV_FW_CHAR as a characteristic identifier.
    public var firmware: CharacteristicID { CharacteristicID(service: service, characteristic: firmwareCharacteristic) }
    /// COMMAND_CHAR as a characteristic identifier.
    public var command: CharacteristicID { CharacteristicID(service: service, characteristic: commandCharacteristic) }
}
