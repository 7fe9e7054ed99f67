import OTACore

/// The GATT layout of SMP over Bluetooth LE: one service with one characteristic, written
/// without response (requests) and notified (responses).
public struct MCUmgrGATTProfile: Sendable, Hashable {
    /// The SMP service.
    public var service: GATTUUID
    /// The SMP characteristic.
    public var smpCharacteristic: GATTUUID

    /// `8D53DC1D-1DB7-4CD3-868B-8A527460AA84`, the SMP service.
    public static let defaultService = GATTUUID("8D53DC1D-1DB7-4CD3-868B-8A527460AA84")!
    /// `DA2E7828-FBCE-4E01-AE9E-261174997C48`, the SMP characteristic.
    public static let defaultSMP = GATTUUID("DA2E7828-FBCE-4E01-AE9E-261174997C48")!

    /// A profile with the standard UUIDs unless told otherwise.
    public init(service: GATTUUID = Self.defaultService, smpCharacteristic: GATTUUID = Self.defaultSMP) {
        self.service = service
        self.smpCharacteristic = smpCharacteristic
    }

    /// The SMP characteristic as an identifier.
    public var smp: CharacteristicID { CharacteristicID(service: service, characteristic: smpCharacteristic) }

    /// The service definition a device exposes.
    public var serviceDefinition: GATTServiceDefinition {
        GATTServiceDefinition(uuid: service, characteristics: [.init(uuid: smpCharacteristic, properties: [.writeWithoutResponse, .notify])])
    }
}
