import Foundation
import OTACore

/// Espressif's BLE OTA (`ble_ota` / `ble_ota_raw` of esp-iot-solution): START with the length on
/// the command characteristic, the image in 4096-byte sectors on the firmware characteristic
/// (each packet with the sector index and a sequence number, the last one 0xFF with the
/// sector's CRC-16), one ACK per sector, STOP.
///
/// Register ``descriptor`` in the app's ``ProtocolRegistry`` to offer it as `--protocol esp-ble-ota`.
public enum EspressifProtocol {
    /// The name users select it by.
    public static let name = "esp-ble-ota"

    /// The protocol's registry entry: its catalog family (devices advertising service 0x8018),
    /// its demo device (`sim:esp-lamp`) and `ota inspect` for ESP-IDF app images.
    public static let descriptor = ProtocolDescriptor(
        name: name,
        summary: "Espressif ble_ota: 4 KB sectors with a CRC-16 and one ACK each, written with response; restarts from byte 0 after a lost link",
        configuration: EspressifConfiguration.self,
        makeClient: { EspressifClient(configuration: $0) },
        makeDeviceModel: { EspressifDeviceModel(profile: $0.profile, variant: $0.variant) },
        containerFormat: EspressifAppImageFormat(),
        rawImagePreparation: EspressifAppImageFormat(),
        defaultFamily: .init(
            name: "esp-ble-ota",
            summary: "ESP32 products with Espressif's ble_ota component (service 0x8018)",
            match: .init(services: [EspressifGATTProfile.defaultService])
        ),
        demoDevices: [
            .init(
                name: "esp-lamp", hardwareProfile: "esp32-mtu185-1m", advertisedName: "ESP-C919",
                manufacturerData: [0x02E5: Data([0x4C, 0x41])], rssi: -61)
        ]
    )
}
