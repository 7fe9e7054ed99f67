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
        parameters: [
            ("service-uuid", "OTA service UUID (default \(GenericGATTProfile.defaultService))"),
            ("data-uuid", "OTA Data characteristic, write without response (default \(GenericGATTProfile.defaultData))"),
            ("control-uuid", "OTA Control characteristic, write + notify (default \(GenericGATTProfile.defaultControl))"),
        ],
        makeClient: { (parameters) throws(OTAError) in
            GenericProtocolClient(profile: try GenericGATTProfile(parameters: parameters))
        },
        makeDeviceModel: { (parameters) throws(OTAError) in
            GenericDeviceModel(profile: try GenericGATTProfile(parameters: parameters))
        }
    )
}
