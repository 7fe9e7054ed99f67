import OTACore

/// Lumen: a (fictional) smart-bulb vendor's OTA protocol, added as its own target without
/// touching OTACore — the worked example of docs/adding-a-protocol.md, in the layout every
/// protocol module shares: `Wire/` (``LumenCommand``, ``LumenReply``), `Client/`
/// (``LumenUpdateStateMachine`` and ``LumenClient``, its thin driver) and `Device/`
/// (``LumenDeviceModel``).
public enum LumenProtocol {
    /// `4c554d00-6c75-6d65-6e00-000000000001`.
    public static let service = GATTUUID("4c554d00-6c75-6d65-6e00-000000000001")!
    /// The one characteristic, write with response + notify.
    public static let characteristic = CharacteristicID(service: service, characteristic: GATTUUID("4c554d01-6c75-6d65-6e00-000000000001")!)

    /// The registry entry; Lumen has no parameters. Registering it is all an app does: the
    /// catalog family and the demo bulb below come with it.
    public static let descriptor = ProtocolDescriptor(
        name: "lumen",
        summary: "Lumen smart bulbs: one characteristic, stop-and-wait writes with response, CRC-32 at the end",
        parameters: [],
        makeClient: { (_) throws(OTAError) in LumenClient() },
        makeDeviceModel: { (_) throws(OTAError) in LumenDeviceModel() },
        defaultFamily: .init(
            name: "lumen-bulb",
            summary: "Lumen smart bulbs",
            match: .init(namePattern: GlobPattern("Lumen-*"), services: [service]),
            configuration: answeringWithinFiveSeconds
        ),
        demoDevices: [
            .init(name: "lumen-bulb", hardwareProfile: "esp32-mtu185-1m", advertisedName: "Lumen-A19-3C", rssi: -60)
        ]
    )

    /// The bulbs answer each write within five seconds.
    private static var answeringWithinFiveSeconds: UpdateConfiguration {
        var configuration = UpdateConfiguration()
        configuration.responseTimeout = .seconds(5)
        return configuration
    }
}
