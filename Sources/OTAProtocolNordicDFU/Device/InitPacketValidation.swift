import Foundation
import OTACore
import OTATrust

/// An init packet the bootloader accepted on Execute: what the data objects must add up to.
struct AcceptedInitPacket: Sendable {
    /// The packet as received (the command object).
    var bytes: Data
    /// Its `InitCommand`.
    var command: InitCommand
    /// The image size the data objects add up to (`m_firmware_size_req`).
    var firmwareSize: Int
}

/// Why Execute refused an init packet: the response's result code (and extended error).
struct InitPacketRejection: Error, Sendable {
    var result: DFUResultCode
    var extendedError: DFUExtendedError?
    /// Whether the bootloader drops the init packet and all progress (`dfu_progress_reset()`),
    /// which SDK 15.3 does for every failure after the packet decoded.
    var resetsProgress: Bool

    static func extended(_ error: DFUExtendedError) -> InitPacketRejection {
        InitPacketRejection(result: .extendedError, extendedError: error, resetsProgress: true)
    }

    static func plain(_ result: DFUResultCode) -> InitPacketRejection {
        InitPacketRejection(result: result, extendedError: nil, resetsProgress: true)
    }

    /// The packet could not be decoded (SDK: `stored_init_cmd_decode()` failed): 0x05, progress kept.
    static let undecodable = InitPacketRejection(result: .invalidObject, extendedError: nil, resetsProgress: false)
}

/// The init packet checks of SDK 15.3's `nrf_dfu_validation_init_cmd_execute()`, in its order
/// (in `nrf_dfu_validation.c`; the fields are pc-nrfutil's `dfu-cc.proto`): decode → signature (when required) →
/// firmware type → hash type → hw_version → sd_req → fw_version → size fields → room in the bank.
/// The first failure wins.
struct InitPacketValidator {
    var configuration: NordicBootloaderModel.Configuration
    /// The versions currently installed, from the settings page.
    var applicationVersion: UInt32
    var bootloaderVersion: UInt32
    /// Bytes of flash available to an image.
    var bankCapacity: Int

    /// The decoded parts the checks need.
    struct Decoded {
        var command: InitCommand
        var signature: InitPacket.Signature?
        /// The bytes the signature covers.
        var signedCommand: Data?
    }

    /// Decodes the command object with the package reader's ``InitPacket``. Kept in one place so
    /// the checks below do not depend on how the packet is parsed. `nil` when the bytes are not
    /// a packet the SDK's nanopb decoder would accept: malformed protobuf, both or neither of
    /// `command`/`signed_command`, or no `init` in the command.
    static func decode(_ bytes: Data) -> Decoded? {
        guard let packet = try? InitPacket(bytes: bytes, name: "init packet"), let command = packet.command else {
            return nil
        }
        return Decoded(command: command, signature: packet.signature, signedCommand: packet.signedCommand)
    }

    /// Runs every check of an Execute on a command object received since the last reset.
    func validate(_ bytes: Data) -> Result<AcceptedInitPacket, InitPacketRejection> {
        guard let decoded = Self.decode(bytes) else { return .failure(.undecodable) }
        let command = decoded.command
        if let rejection = signatureRejection(decoded) ?? versionRejection(command) {
            return .failure(rejection)
        }
        let size: Int
        switch firmwareSize(command) {
        case .success(let value): size = value
        case .failure(let rejection): return .failure(rejection)
        }
        // update_data_addr_get(): nrf_dfu_cache_prepare() finds no room → INSUFFICIENT_RESOURCES.
        guard size <= bankCapacity else { return .failure(.plain(.insufficientResources)) }
        return .success(AcceptedInitPacket(bytes: bytes, command: command, firmwareSize: size))
    }

    /// Recovers an init packet stored in the settings page at boot: the SDK re-executes it,
    /// which only recomputes the image size (`m_valid_init_cmd_present` is already set).
    static func restore(_ bytes: Data, configuration: NordicBootloaderModel.Configuration) -> AcceptedInitPacket? {
        guard let decoded = decode(bytes) else { return nil }
        let validator = InitPacketValidator(configuration: configuration, applicationVersion: 0, bootloaderVersion: 0, bankCapacity: .max)
        guard case .success(let size) = validator.firmwareSize(decoded.command) else { return nil }
        return AcceptedInitPacket(bytes: bytes, command: decoded.command, firmwareSize: size)
    }

    // MARK: - Signature (nrf_dfu_validation_signature_check)

    /// The SDK checks presence, type and length, then verifies ECDSA P-256 over the `InitCommand`
    /// bytes. With a configured ``NordicBootloaderModel/Configuration/publicKey`` this model
    /// verifies too (0x05 Invalid Object when the signature does not verify, as
    /// `nrf_dfu_validation_signature_check()` returns); without one, a present, well-formed
    /// signature is accepted as valid.
    private func signatureRejection(_ decoded: Decoded) -> InitPacketRejection? {
        guard configuration.requiresSignature || configuration.publicKey != nil else { return nil }
        guard let signature = decoded.signature, let signed = decoded.signedCommand else { return .extended(.signatureMissing) }
        guard signature.type == .ecdsaP256SHA256 else { return .extended(.wrongSignatureType) }
        guard signature.bytes.count == 64 else { return .plain(.operationFailed) }
        if let key = configuration.publicKey {
            let raw = InitPacket.bigEndianSignature(signature.bytes)
            guard key.verifies(raw, of: signed) else { return .plain(.invalidObject) }
        }
        return nil
    }

    // MARK: - Versions (nrf_dfu_ver_validation_check)

    private func versionRejection(_ command: InitCommand) -> InitPacketRejection? {
        // fw_type_ok(): SDK 15.3 accepts application, SoftDevice, bootloader and SD+BL.
        guard let type = command.type, [.application, .softdevice, .bootloader, .softdeviceBootloader].contains(type) else {
            return .extended(.initCommandInvalid)
        }
        guard command.hash?.type == .sha256 else { return .extended(.wrongHashType) }
        // A debug bootloader skips the version checks for packets marked is_debug.
        if configuration.isDebugBuild && command.isDebug == true { return nil }
        guard let hardwareVersion = command.hwVersion else { return .extended(.initCommandInvalid) }
        guard hardwareVersion == configuration.hardwareVersion else { return .extended(.hardwareVersionFailure) }
        guard softDeviceRequirementMet(command, type: type) else { return .extended(.softDeviceVersionFailure) }
        if let version = command.fwVersion {
            guard firmwareVersionAcceptable(version, type: type) else { return .extended(.firmwareVersionFailure) }
        } else if firmwareVersionRequired(type) {
            return .extended(.initCommandInvalid)
        }
        return nil
    }

    /// sd_req_ok() of SDK 15.3. A BLE bootloader needs its SoftDevice, so SoftDevice updates are
    /// always downgrade-protected. `0x0000` as the first entry means "the application does not
    /// need (and may overwrite) the SoftDevice".
    private func softDeviceRequirementMet(_ command: InitCommand, type: InitPacket.FirmwareType) -> Bool {
        let requirement = command.sdReq
        let preventDowngrade = configuration.preventsDowngrade || type == .softdevice
        let needsSoftDevice = !requirement.isEmpty && requirement[0] != 0
        guard configuration.installedSoftDevice != nil else {
            // No SoftDevice present: refuse images that need one.
            return needsSoftDevice ? false : (!preventDowngrade || command.fwVersion != nil)
        }
        if needsSoftDevice { return listsInstalledSoftDevice(requirement) }
        if type == .application {
            // An application that overwrites the SoftDevice must list the present one after the 0.
            if preventDowngrade && requirement.count > 1 && requirement[0] == 0 {
                return listsInstalledSoftDevice(requirement)
            }
            return true
        }
        // Do not allow SoftDevice updates that assume no SoftDevice is present.
        return !preventDowngrade || type != .softdevice
    }

    private func listsInstalledSoftDevice(_ requirement: [UInt32]) -> Bool {
        guard let installed = configuration.installedSoftDevice else { return false }
        return requirement.contains { $0 == UInt32(installed) || (configuration.acceptsAnySoftDevice && $0 == 0xFFFE) }
    }

    /// fw_version_ok(): applications and SoftDevices must not be older than the installed
    /// application (same version accepted); bootloaders must be strictly newer.
    private func firmwareVersionAcceptable(_ version: UInt32, type: InitPacket.FirmwareType) -> Bool {
        if type == .application || type == .softdevice {
            return version >= applicationVersion || !configuration.preventsDowngrade
        }
        return version > bootloaderVersion
    }

    /// fw_version_required(): optional for SoftDevices, for applications only with downgrade
    /// prevention, always required for bootloaders.
    private func firmwareVersionRequired(_ type: InitPacket.FirmwareType) -> Bool {
        if type == .softdevice { return false }
        if type == .application { return configuration.preventsDowngrade }
        return true
    }

    // MARK: - Size (update_data_size_get)

    /// The image size from the size field(s) of the type: `app_size`, `sd_size`, `bl_size`
    /// (at most the bootloader area, else 0x04), or `sd_size + bl_size`. Missing or zero → 0x0B 0x04.
    func firmwareSize(_ command: InitCommand) -> Result<Int, InitPacketRejection> {
        let type = command.type?.rawValue ?? 0
        var size: UInt64 = 0
        if type == InitPacket.FirmwareType.application.rawValue || type == InitPacket.FirmwareType.externalApplication.rawValue,
            let appSize = command.appSize
        {
            size = UInt64(appSize)
        } else {
            if type & InitPacket.FirmwareType.softdevice.rawValue != 0, let sdSize = command.sdSize {
                size = UInt64(sdSize)
            }
            if type & InitPacket.FirmwareType.bootloader.rawValue != 0, let blSize = command.blSize {
                guard Int(blSize) <= configuration.maximumBootloaderSize else {
                    return .failure(.plain(.insufficientResources))
                }
                size += UInt64(blSize)
            }
        }
        guard size > 0 else { return .failure(.extended(.initCommandInvalid)) }
        return .success(Int(size))
    }
}
