import Foundation
import OTACore

/// Writes unsigned MCUboot images as `imgtool sign` without a key does: a 32-byte header (or a
/// padded one), the body, and an unprotected TLV area holding the SHA-256 TLV. For the
/// benchmark, the device model's factory image and tests that start from bare bytes; images
/// for real devices come from the vendor's build (imgtool), which signs them.
public enum MCUbootImageWriter {
    /// An unsigned image of `body` with `version`.
    public static func unsigned(body: Data, version: MCUbootVersion, headerSize: Int = MCUbootImageHeader.length) -> Data {
        precondition(headerSize >= MCUbootImageHeader.length && headerSize <= Int(UInt16.max))
        var image = Data()
        func u16(_ value: Int) { image.append(contentsOf: [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)]) }
        func u32(_ value: UInt32) { for shift in stride(from: 0, to: 32, by: 8) { image.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) } }
        u32(MCUbootImageHeader.magic)
        u32(0)  // load address
        u16(headerSize)
        u16(0)  // no protected TLVs
        u32(UInt32(body.count))
        u32(0)  // flags
        image.append(version.major)
        image.append(version.minor)
        u16(Int(version.revision))
        u32(version.build)
        u32(0)  // padding
        image.append(Data(count: headerSize - MCUbootImageHeader.length))
        image.append(body)
        let digest = SHA256.hash(image)
        u16(Int(MCUbootTLV.areaMagic))
        u16(4 + 4 + digest.count)
        u16(Int(MCUbootTLV.Kind.sha256.rawValue))
        u16(digest.count)
        image.append(contentsOf: digest)
        return image
    }
}

/// A raw image becomes an unsigned MCUboot image of version 0.0.1 (what `ota benchmark`
/// measures); an image that already is one is sent as it is.
public struct MCUbootRawImagePreparation: RawImagePreparation {
    /// Creates the preparation.
    public init() {}

    /// The image, wrapped in an MCUboot header and SHA-256 TLV unless it already has them.
    public func prepare(_ image: FirmwareImage) throws(OTAError) -> FirmwareImage {
        if (try? MCUbootImage(reading: image)) != nil { return image }
        // Wrapping makes a new image in memory (measurements and tests start from bare bytes).
        return try FirmwareImage(
            bytes: MCUbootImageWriter.unsigned(body: try image.allBytes(), version: MCUbootVersion(major: 0, minor: 0, revision: 1)),
            name: image.name, attachments: image.attachments)
    }
}

/// MCUboot images as a container format: `ota inspect` shows the header, both digests and the
/// TLVs, and `ota update --protocol mcumgr` refuses a broken one before connecting. A file
/// without MCUboot's magic is not one (`nil`).
///
/// Only files are recognised (``load(_:)``, ``inspect(_:)``): bytes already in memory are sent as
/// they are, so the other protocols, which send raw images, never refuse a file for looking like
/// an MCUboot image (an ESP32 running MCUboot takes them over framed).
public struct MCUbootImageFormat: FirmwareContainerFormat, FirmwareVersionDeclaring {
    /// Creates the format.
    public init() {}

    /// The file as one image, after checking it; `nil` when it has no MCUboot magic.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` naming what is wrong with an MCUboot image.
    public func load(_ url: URL) throws(OTAError) -> [FirmwareImage]? {
        let image = try FirmwareImage(contentsOf: url)
        guard MCUbootImage.hasMagic(try image.prefix(4)) else { return nil }
        _ = try MCUmgrClient.mcuboot(image)
        return [image]
    }

    /// The image's header, digests and TLVs, or why it is broken; `nil` without MCUboot magic.
    public func inspect(_ url: URL) throws(OTAError) -> FirmwareInspection? {
        let image = try FirmwareImage(contentsOf: url)
        guard MCUbootImage.hasMagic(try image.prefix(4)) else { return nil }
        do {
            return FirmwareInspection(report: try MCUbootImage(reading: image).report, problems: [])
        } catch {
            return FirmwareInspection(report: "MCUboot image \(MessageText.name(url.lastPathComponent)): \(image.count) bytes", problems: ["\(error)"])
        }
    }

    /// The version in the image's MCUboot header ("1.2.3", "1.2.3.4"), for the downgrade check;
    /// `nil` for an image that is not a valid MCUboot image.
    public func declaredVersion(of image: FirmwareImage) -> String? {
        (try? MCUbootImage(reading: image))?.version.description
    }
}
