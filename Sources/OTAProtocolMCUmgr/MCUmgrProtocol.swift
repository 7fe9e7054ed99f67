import Foundation
import OTACore

/// MCUmgr image management over SMP, for Zephyr and nRF Connect SDK devices with MCUboot (see
/// docs/protocols/mcumgr.md).
public enum MCUmgrProtocol {
    /// The name users select it by.
    public static let name = "mcumgr"

    /// The protocol's registry entry.
    public static let descriptor = ProtocolDescriptor(
        name: name,
        summary: "MCUmgr/SMP image management (Zephyr, nRF Connect SDK) with MCUboot: pipelined upload, test/confirm, resume",
        configuration: MCUmgrConfiguration.self,
        makeClient: { MCUmgrClient(configuration: $0) },
        makeDeviceModel: { MCUmgrDeviceModel(settings: $0.deviceSettings, profile: $0.profile) },
        containerFormat: MCUbootImageFormat(),
        rawImagePreparation: MCUbootRawImagePreparation(),
        // The transfer is what is measured (the benchmark keeps one connection, so no reset):
        // one request in flight as Linux and Python tools keep, against the pipelined window,
        // with Zephyr's small buffer and NCS's reassembly default; and with 2475 on a device that
        // erases the image's sectors at the first request (Zephyr's default) instead of
        // progressively, waiting as long as that takes (10 MB on an ESP32 erase for 110 s).
        parameterVariants: [
            [mode: "upload", window: "1", bufferSize: "512"], [mode: "upload", window: "8", bufferSize: "512"],
            [mode: "upload", window: "1", bufferSize: "2475"], [mode: "upload", window: "8", bufferSize: "2475"],
            [mode: "upload", window: "1", bufferSize: "2475", erase: "first", eraseTimeout: "600000"],
            [mode: "upload", window: "8", bufferSize: "2475", erase: "first", eraseTimeout: "600000"],
        ],
        defaultFamily: .init(
            name: "mcumgr-smp",
            summary: "Zephyr or nRF Connect SDK firmware with the SMP service and MCUboot",
            match: .init(services: [MCUmgrGATTProfile.defaultService]),
            configuration: resumingFiveTimes
        ),
        demoDevices: [
            .init(
                name: "zephyr-sensor", hardwareProfile: "nrf52840-mtu244-2m", advertisedName: "Zephyr SMP", manufacturerData: [0x0059: Data([0x5A, 0x01])],
                rssi: -61)
        ],
        signatureVerification: MCUbootSignatureVerification(),
        makeVerifyingDeviceModel: { (configuration, key) in
            var settings = configuration.deviceSettings
            settings.bootKey = key
            return MCUmgrDeviceModel(settings: settings, profile: configuration.profile)
        }
    )

    private static let mode = MCUmgrConfiguration.modeParameter.spec.name
    private static let window = MCUmgrConfiguration.windowParameter.spec.name
    private static let bufferSize = MCUmgrConfiguration.bufferSizeParameter.spec.name
    private static let erase = MCUmgrConfiguration.eraseParameter.spec.name
    private static let eraseTimeout = MCUmgrConfiguration.eraseTimeoutParameter.spec.name

    /// The default family's engine settings: up to five resume attempts.
    private static var resumingFiveTimes: UpdateConfiguration {
        var configuration = UpdateConfiguration()
        configuration.resume.maximumAttempts = 5
        return configuration
    }
}
