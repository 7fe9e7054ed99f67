import OTACore

extension DFUPackageFormat: HardwareCompatibilityDeclaring {
    /// The init packet's `hw_version`, compared with the device's Device Information hardware
    /// revision when that reads as an integer ("52", "0x34"). Any other revision ("nRF52840 rev
    /// 2") is not compared: the bootloader checks `hw_version` against its own build setting
    /// anyway. `nil` for an image without an init packet or one without `hw_version`.
    public func hardwareCompatibility(of image: FirmwareImage) -> HardwareCompatibility? {
        guard let bytes = image.attachments[NordicDFUClient.initPacketKey],
            let packet = try? InitPacket(bytes: bytes, name: "\(image.name)'s init packet"),
            let hardware = packet.command?.hwVersion
        else { return nil }
        return HardwareCompatibility(
            .integer(hardware), source: "\(image.name)'s init packet", whenUnknown: .note("the bootloader checks hw_version itself")
        )
    }
}
