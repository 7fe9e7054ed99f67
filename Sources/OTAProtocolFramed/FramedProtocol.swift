import OTACore

/// The framed resumable protocol: per-chunk offset and CRC-32, per-batch ACKs, resume after any
/// disconnect (see docs/protocols/framed.md).
public enum FramedProtocol {
    /// The name users select it by.
    public static let name = "framed"

    /// The protocol's registry entry.
    public static let descriptor = ProtocolDescriptor(
        name: name,
        summary: "Framed chunks (offset + CRC-32), per-batch ACKs, resumes after any disconnect or reboot",
        parameters: [
            ("batch", "chunks per acknowledgement the app asks for, 1...1024 (default 16)"),
            ("window", "batches in flight, 2...64 (default 3)"),
            ("ack-timeout-ms", "silence before resending from the last ACK, 50...60000 (default 2000)"),
            ("image-version", "version number in the session identity (default 0)"),
            ("service-uuid", "service UUID (default \(FramedGATTProfile.defaultService))"),
            ("data-uuid", "Data characteristic (default \(FramedGATTProfile.defaultData))"),
            ("control-uuid", "Control characteristic (default \(FramedGATTProfile.defaultControl))"),
            ("status-uuid", "Status characteristic (default \(FramedGATTProfile.defaultStatus))"),
        ],
        makeClient: { (parameters) throws(OTAError) in
            FramedProtocolClient(configuration: try FramedConfiguration(parameters: parameters))
        },
        makeDeviceModel: { (parameters) throws(OTAError) in
            FramedDeviceModel(profile: try FramedConfiguration(parameters: parameters).profile)
        }
    )
}
