import Foundation
import OTACore

/// The framed resumable protocol: a sequence number per chunk and a CRC-32 per batch (version 2;
/// offset and CRC-32 per chunk in version 1), per-batch ACKs, resume after any disconnect (see
/// docs/protocols/framed.md).
public enum FramedProtocol {
    /// The name users select it by.
    public static let name = "framed"

    /// The protocol's registry entry.
    public static let descriptor = ProtocolDescriptor(
        name: name,
        summary: "Framed chunks (sequence number, CRC-32 per batch), per-batch ACKs, resumes after any disconnect or reboot",
        configuration: FramedConfiguration.self,
        makeClient: { FramedClient(configuration: $0) },
        makeDeviceModel: { FramedDeviceModel(profile: $0.profile) },
        // The benchmark measures version 2 (the default) and version 1 side by side.
        parameterVariants: [[:], [FramedConfiguration.versionParameter.spec.name: "1"]],
        defaultFamily: .init(
            name: "framed-ota",
            summary: "Firmware with the framed resumable OTA service",
            match: .init(services: [FramedGATTProfile.defaultService]),
            parameters: [FramedConfiguration.batchParameter.spec.name: "16", FramedConfiguration.windowParameter.spec.name: "3"],
            configuration: resumingFiveTimes
        ),
        demoDevices: [
            .init(
                name: "bolt-lock", hardwareProfile: "esp32s3-mtu244-1m", advertisedName: "BoltLock 7F21",
                manufacturerData: [0x02E5: Data([0x42, 0x4C, 0x01])], rssi: -67
            )
        ]
    )

    /// The default family's engine settings: up to five resume attempts.
    private static var resumingFiveTimes: UpdateConfiguration {
        var configuration = UpdateConfiguration()
        configuration.resume.maximumAttempts = 5
        return configuration
    }
}
