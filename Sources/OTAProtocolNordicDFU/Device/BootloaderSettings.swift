import Foundation
import OTACore

/// What the simulated Nordic bootloader keeps in flash across resets: the SDK's settings page
/// (`s_dfu_settings` in `nrf_dfu_settings.c`), reduced to the fields the model uses.
///
/// SDK 15.3 writes its settings page when an init packet is executed and when an update finishes
/// (`NordicBootloaderModel` §7); data progress is never written there (`NRF_DFU_SAVE_PROGRESS_IN_FLASH
/// = 0`). The model does the same, in the last sector(s) of the flash slot, after the bank that
/// receives the image.
///
/// Layout (little-endian): `NBLS` magic, u32 layout version (1), u32 body length, u32 CRC-32 of
/// the body, then the body: u32 application version, u32 bootloader version, u32 init packet
/// length (0 = none), the init packet bytes, u8 installed flag and, when set, u32 firmware type,
/// u32 version, u32 size, u32 CRC-32 and the 32-byte SHA-256 of the installed image. A page that
/// is erased, truncated or fails its CRC reads as "no settings".
public struct BootloaderSettings: Sendable, Hashable {
    /// The image the last successful update installed.
    public struct InstalledImage: Sendable, Hashable {
        /// What the init packet said the image was.
        public var firmwareType: InitPacket.FirmwareType
        /// `fw_version` of its init packet (0 when absent).
        public var version: UInt32
        /// Size in bytes.
        public var size: Int
        /// CRC-32 of the image.
        public var crc32: UInt32
        /// SHA-256 of the image, in the usual (big-endian) order, as `sha256sum` prints it.
        public var sha256: [UInt8]

        /// Creates a record.
        public init(firmwareType: InitPacket.FirmwareType, version: UInt32, size: Int, crc32: UInt32, sha256: [UInt8]) {
            self.firmwareType = firmwareType
            self.version = version
            self.size = size
            self.crc32 = crc32
            self.sha256 = sha256
        }
    }

    /// `s_dfu_settings.app_version`: an application or SoftDevice update must not be older.
    public var applicationVersion: UInt32
    /// `s_dfu_settings.bootloader_version`: a bootloader update must be newer.
    public var bootloaderVersion: UInt32
    /// The executed (validated) init packet, kept so that the transfer can go on after a reset;
    /// `nil` when there is none.
    public var initPacket: Data?
    /// The last image installed.
    public var installedImage: InstalledImage?

    /// Creates settings.
    public init(applicationVersion: UInt32, bootloaderVersion: UInt32, initPacket: Data? = nil, installedImage: InstalledImage? = nil) {
        self.applicationVersion = applicationVersion
        self.bootloaderVersion = bootloaderVersion
        self.initPacket = initPacket
        self.installedImage = installedImage
    }

    static let magic: [UInt8] = Array("NBLS".utf8)
    static let layoutVersion: UInt32 = 1
    static let headerLength = 16

    /// The most bytes the settings take with an init packet of up to `initCapacity` bytes.
    static func maximumEncodedSize(initCapacity: Int) -> Int {
        headerLength + 12 + max(0, initCapacity) + 1 + 16 + 32
    }

    /// The flash range the settings live in: the last whole sectors of the slot that can hold
    /// them; `nil` when the slot is too small.
    static func region(in flash: any FlashStorage, initCapacity: Int) -> Range<Int>? {
        let sector = max(1, flash.sectorSize)
        guard flash.capacity > 0, sector <= flash.capacity else { return nil }
        let needed = maximumEncodedSize(initCapacity: min(max(0, initCapacity), 1 << 20))
        let sectors = needed / sector + (needed % sector == 0 ? 0 : 1)
        let (length, overflow) = sectors.multipliedReportingOverflow(by: sector)
        guard !overflow, length <= flash.capacity else { return nil }
        let start = (flash.capacity - length) / sector * sector
        return start..<(start + length)
    }

    /// The bytes written to flash.
    var encoded: Data {
        var body: [UInt8] = []
        body.appendLE(applicationVersion)
        body.appendLE(bootloaderVersion)
        let initBytes = initPacket.map { [UInt8]($0) } ?? []
        body.appendLE(UInt32(truncatingIfNeeded: initBytes.count))
        body += initBytes
        if let image = installedImage {
            body.append(1)
            body.appendLE(image.firmwareType.rawValue)
            body.appendLE(image.version)
            body.appendLE(UInt32(truncatingIfNeeded: image.size))
            body.appendLE(image.crc32)
            var digest = Array(image.sha256.prefix(32))
            digest += [UInt8](repeating: 0, count: 32 - digest.count)
            body += digest
        } else {
            body.append(0)
        }
        var bytes = Self.magic
        bytes.appendLE(Self.layoutVersion)
        bytes.appendLE(UInt32(truncatingIfNeeded: body.count))
        bytes.appendLE(CRC32.checksum(body))
        return Data(bytes + body)
    }

    /// Decodes settings; `nil` when `data` does not hold a valid settings page.
    init?(decoding data: Data) {
        var reader = LittleEndianReader([UInt8](data))
        guard let magic = reader.bytes(4), magic == Self.magic,
            reader.u32() == Self.layoutVersion,
            let length = reader.u32().map(Int.init),
            let crc = reader.u32(),
            let body = reader.bytes(length),
            CRC32.checksum(body) == crc
        else { return nil }
        var fields = LittleEndianReader(body)
        guard let applicationVersion = fields.u32(),
            let bootloaderVersion = fields.u32(),
            let initLength = fields.u32().map(Int.init),
            let initBytes = fields.bytes(initLength),
            let installed = fields.bytes(1)
        else { return nil }
        self.applicationVersion = applicationVersion
        self.bootloaderVersion = bootloaderVersion
        self.initPacket = initBytes.isEmpty ? nil : Data(initBytes)
        if installed[0] == 1 {
            guard let type = fields.u32(), let version = fields.u32(), let size = fields.u32(), let imageCRC = fields.u32(),
                let digest = fields.bytes(32)
            else { return nil }
            installedImage = InstalledImage(
                firmwareType: InitPacket.FirmwareType(rawValue: type),
                version: version,
                size: Int(size),
                crc32: imageCRC,
                sha256: digest
            )
        } else {
            installedImage = nil
        }
    }

    /// Reads the settings from `region` of `flash`; `nil` when none were ever written.
    static func read(from flash: any FlashStorage, region: Range<Int>) -> BootloaderSettings? {
        guard region.lowerBound >= 0, region.upperBound <= flash.capacity else { return nil }
        return BootloaderSettings(decoding: flash.read(region))
    }

    /// Erases `region` and writes the settings there.
    func write(to flash: any FlashStorage, region: Range<Int>) throws(FlashError) {
        let bytes = encoded
        guard bytes.count <= region.count else {
            throw FlashError("bootloader settings of \(bytes.count) bytes do not fit their \(region.count)-byte page")
        }
        try flash.erase(region)
        try flash.write(bytes, at: region.lowerBound)
    }
}

// MARK: - Little-endian helpers

extension [UInt8] {
    fileprivate mutating func appendLE(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 24))
    }
}

/// A bounds-checked cursor over bytes: every read returns `nil` instead of running past the end.
private struct LittleEndianReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= bytes.count - position else { return nil }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    mutating func u32() -> UInt32? {
        guard let raw = bytes(4) else { return nil }
        return raw.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }
}
