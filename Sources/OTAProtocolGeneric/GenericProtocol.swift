import OTACore

/// The generic two-characteristic protocol: START / data / COMMIT / ABORT with CRC-32, as in
/// the product's source article and its ESP-IDF firmware.
///
/// Register ``descriptor`` in the app's ``ProtocolRegistry`` to offer it as `--protocol generic`.
public enum GenericProtocol {
    /// The name users select it by.
    public static let name = "generic"

    /// The protocol's registry entry.
    public static let descriptor = ProtocolDescriptor(
        name: name,
        summary: "Two characteristics (Data + Control), START/COMMIT/ABORT with CRC-32; restarts after a disconnect",
        configuration: GenericGATTProfile.self,
        makeClient: { GenericClient(profile: $0) },
        makeDeviceModel: { GenericDeviceModel(profile: $0) },
        defaultFamily: .init(
            name: "generic-ota",
            summary: "Firmware with the generic OTA service (seed ESP-IDF example)",
            match: .init(services: [GenericGATTProfile.defaultService])
        ),
        demoDevices: [
            .init(name: "acme-sensor", hardwareProfile: "esp32s3-mtu244-2m", advertisedName: "ACME-Sensor-01A4", rssi: -52)
        ]
    )
}
