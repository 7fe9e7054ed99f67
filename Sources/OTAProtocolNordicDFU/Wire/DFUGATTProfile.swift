import OTACore

/// The Secure DFU service and its characteristics (nRF5 SDK 12+ bootloaders).
public enum DFUGATTProfile {
    /// The Secure DFU service, `FE59` (assigned to Nordic).
    public static let service = GATTUUID("FE59")!
    /// DFU Control Point: write with response + notify.
    public static let controlPoint = CharacteristicID(service: service, characteristic: GATTUUID("8EC90001-F315-4F60-9FB8-838830DAEA50")!)
    /// DFU Packet: write without response.
    public static let packet = CharacteristicID(service: service, characteristic: GATTUUID("8EC90002-F315-4F60-9FB8-838830DAEA50")!)
    /// Buttonless DFU without bonds, in the application's FE59 service: write + indicate.
    public static let buttonless = CharacteristicID(service: service, characteristic: GATTUUID("8EC90003-F315-4F60-9FB8-838830DAEA50")!)
}
