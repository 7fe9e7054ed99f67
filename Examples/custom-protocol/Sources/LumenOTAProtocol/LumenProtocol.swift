import OTACore

/// Lumen: a (fictional) smart-bulb vendor's OTA protocol, added as its own target without
/// touching OTACore — the worked example of docs/adding-a-protocol.md.
public enum LumenProtocol {
    /// `4c554d00-6c75-6d65-6e00-000000000001`.
    public static let service = GATTUUID("4c554d00-6c75-6d65-6e00-000000000001")!
    /// The one characteristic, write with response + notify.
    public static let characteristic = CharacteristicID(service: service, characteristic: GATTUUID("4c554d01-6c75-6d65-6e00-000000000001")!)

    /// The registry entry; Lumen has no parameters.
    public static let descriptor = ProtocolDescriptor(
        name: "lumen",
        summary: "Lumen smart bulbs: one characteristic, stop-and-wait writes with response, CRC-32 at the end",
        parameters: [],
        makeClient: { (parameters) throws(OTAError) in
            try parameters.validate(known: [], protocolName: "lumen")
            return LumenClient()
        },
        makeDeviceModel: { (parameters) throws(OTAError) in
            try parameters.validate(known: [], protocolName: "lumen")
            return LumenDeviceModel()
        }
    )
}
