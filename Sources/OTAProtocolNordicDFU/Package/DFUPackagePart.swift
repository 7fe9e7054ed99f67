import Foundation
import OTACore

/// One firmware part of a Nordic DFU package: an image and the init packet that describes it.
///
/// A package sends its parts one after the other, each as a command object (the init packet,
/// verbatim) followed by data objects (the image).
public struct DFUPackagePart: Sendable {
    /// Which manifest entry a part comes from.
    public enum Kind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// `softdevice_bootloader`: a SoftDevice and a bootloader in one image.
        case softdeviceBootloader = "softdevice_bootloader"
        /// `softdevice`.
        case softdevice
        /// `bootloader`.
        case bootloader
        /// `application`.
        case application

        /// The manifest key ("softdevice_bootloader", "application", ...).
        public var description: String { rawValue }

        /// The init packet types that fit this kind of part.
        var acceptedTypes: [InitPacket.FirmwareType] {
            switch self {
            case .softdeviceBootloader: [.softdeviceBootloader]
            case .softdevice: [.softdevice]
            case .bootloader: [.bootloader]
            case .application: [.application, .externalApplication]
            }
        }

        /// The kind of part an init packet type describes, if any.
        init?(_ type: InitPacket.FirmwareType) {
            switch type {
            case .application, .externalApplication: self = .application
            case .softdevice: self = .softdevice
            case .bootloader: self = .bootloader
            case .softdeviceBootloader: self = .softdeviceBootloader
            default: return nil
            }
        }
    }

    /// The ``FirmwareImage/attachments`` key under which ``image`` carries the init packet.
    public static let initPacketAttachment = "init-packet"

    /// Which part this is.
    public let kind: Kind
    /// The image (the `.bin` file); its ``FirmwareImage/name`` is the file name, and it carries
    /// the init packet bytes as the attachment ``initPacketAttachment``.
    public let image: FirmwareImage
    /// The decoded init packet (the `.dat` file); its ``InitPacket/name`` is the file name.
    public let initPacket: InitPacket
    /// The SHA-256 of the image, in the usual (big-endian) order.
    public let imageSHA256: [UInt8]
    /// The SoftDevice size the manifest states, if any (informative).
    public let manifestSDSize: Int?
    /// The bootloader size the manifest states, if any (informative).
    public let manifestBLSize: Int?

    /// The init packet bytes exactly as in the package: what the device receives.
    public var initPacketBytes: Data { initPacket.rawBytes }
    /// The image file name ("app.bin").
    public var binFile: String { image.name }
    /// The init packet file name ("app.dat").
    public var datFile: String { initPacket.name }

    /// Creates a part, hashing the image and attaching the init packet to it.
    public init(
        kind: Kind,
        image: FirmwareImage,
        initPacket: InitPacket,
        manifestSDSize: Int? = nil,
        manifestBLSize: Int? = nil
    ) {
        var image = image
        image.attachments[Self.initPacketAttachment] = initPacket.rawBytes
        self.kind = kind
        self.image = image
        self.initPacket = initPacket
        self.imageSHA256 = [UInt8](image.sha256)
        self.manifestSDSize = manifestSDSize
        self.manifestBLSize = manifestBLSize
    }
}
