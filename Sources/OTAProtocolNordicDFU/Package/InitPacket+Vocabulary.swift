import Foundation
import OTACore

/// An enum of dfu-cc.proto, kept as its `uint32` so that numbers this side does not know survive:
/// they are all named the same way.
protocol DFUSchemaEnum: WireCode where RawValue == UInt32 {}

extension DFUSchemaEnum {
    /// "unknown (7)".
    public static func meaning(ofUnknown rawValue: UInt32) -> String { "unknown (\(rawValue))" }
}

extension InitPacket {
    /// A dfu-cc.proto value that is a type and bytes: `Hash`, `BootValidation` and a signed
    /// command's signature all are.
    public struct TypedBytes<Kind: WireCode>: Sendable, Hashable {
        /// What the bytes are (a digest algorithm, a validation method, a signature algorithm).
        public var type: Kind
        /// The bytes as stored in the packet.
        public var bytes: Data
    }

    /// `Command.op_code` of dfu-cc.proto.
    public struct OpCode: WireCode, DFUSchemaEnum {
        /// The number on the wire.
        public let rawValue: UInt32
        /// Creates an op code from its number (unknown numbers are kept).
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// RESET (0): defined by pc-nrfutil's copy of the schema, unused by bootloaders.
        public static let reset = OpCode(rawValue: 0)
        /// INIT (1): the only op code a bootloader accepts in a command object.
        public static let initialize = OpCode(rawValue: 1)

        public static let meanings: [OpCode: String] = [
            .reset: "RESET", .initialize: "INIT",
        ]
    }

    /// `FwType` of dfu-cc.proto: what kind of image the init packet describes.
    public struct FirmwareType: WireCode, DFUSchemaEnum {
        /// The number on the wire.
        public let rawValue: UInt32
        /// Creates a type from its number (unknown numbers are kept).
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// APPLICATION (0).
        public static let application = FirmwareType(rawValue: 0)
        /// SOFTDEVICE (1).
        public static let softdevice = FirmwareType(rawValue: 1)
        /// BOOTLOADER (2).
        public static let bootloader = FirmwareType(rawValue: 2)
        /// SOFTDEVICE_BOOTLOADER (3): a SoftDevice followed by a bootloader in one image.
        public static let softdeviceBootloader = FirmwareType(rawValue: 3)
        /// EXTERNAL_APPLICATION (4): an image the bootloader passes on instead of applying.
        public static let externalApplication = FirmwareType(rawValue: 4)

        public static let meanings: [FirmwareType: String] = [
            .application: "APPLICATION", .softdevice: "SOFTDEVICE", .bootloader: "BOOTLOADER",
            .softdeviceBootloader: "SOFTDEVICE_BOOTLOADER", .externalApplication: "EXTERNAL_APPLICATION",
        ]
    }

    /// `HashType` of dfu-cc.proto.
    public struct HashType: WireCode, DFUSchemaEnum {
        /// The number on the wire.
        public let rawValue: UInt32
        /// Creates a hash type from its number (unknown numbers are kept).
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// NO_HASH (0).
        public static let none = HashType(rawValue: 0)
        /// CRC (1).
        public static let crc = HashType(rawValue: 1)
        /// SHA128 (2).
        public static let sha128 = HashType(rawValue: 2)
        /// SHA256 (3): the only type Secure DFU bootloaders accept.
        public static let sha256 = HashType(rawValue: 3)
        /// SHA512 (4).
        public static let sha512 = HashType(rawValue: 4)

        public static let meanings: [HashType: String] = [
            .none: "NO_HASH", .crc: "CRC", .sha128: "SHA128", .sha256: "SHA256", .sha512: "SHA512",
        ]
    }

    /// `ValidationType` of dfu-cc.proto: how the bootloader checks the image at every boot.
    public struct ValidationType: WireCode, DFUSchemaEnum {
        /// The number on the wire.
        public let rawValue: UInt32
        /// Creates a validation type from its number (unknown numbers are kept).
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// NO_VALIDATION (0).
        public static let none = ValidationType(rawValue: 0)
        /// VALIDATE_GENERATED_CRC (1): the bootloader computes and stores a CRC-32 itself.
        public static let generatedCRC = ValidationType(rawValue: 1)
        /// VALIDATE_SHA256 (2).
        public static let sha256 = ValidationType(rawValue: 2)
        /// VALIDATE_ECDSA_P256_SHA256 (3): the bytes are a signature over the image.
        public static let ecdsaP256SHA256 = ValidationType(rawValue: 3)

        public static let meanings: [ValidationType: String] = [
            .none: "NO_VALIDATION", .generatedCRC: "VALIDATE_GENERATED_CRC", .sha256: "VALIDATE_SHA256",
            .ecdsaP256SHA256: "VALIDATE_ECDSA_P256_SHA256",
        ]
    }

    /// `SignatureType` of dfu-cc.proto.
    public struct SignatureType: WireCode, DFUSchemaEnum {
        /// The number on the wire.
        public let rawValue: UInt32
        /// Creates a signature type from its number (unknown numbers are kept).
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// ECDSA_P256_SHA256 (0): 64 bytes, r and s each byte-reversed.
        public static let ecdsaP256SHA256 = SignatureType(rawValue: 0)
        /// ED25519 (1).
        public static let ed25519 = SignatureType(rawValue: 1)

        public static let meanings: [SignatureType: String] = [
            .ecdsaP256SHA256: "ECDSA_P256_SHA256", .ed25519: "ED25519",
        ]
    }
}
