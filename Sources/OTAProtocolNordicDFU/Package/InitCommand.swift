import Foundation
import OTACore

/// The `InitCommand` message of an init packet: what the image is, what it runs on, how large it
/// is and its hash.
///
/// Fields absent from the packet are `nil` (or empty for repeated fields), so that a check can
/// tell "missing" from "zero". ``rawBytes`` keeps the message exactly as serialized: it is what
/// the signature of a signed packet covers.
public struct InitCommand: Sendable, Hashable {
    /// `Hash`: the image digest the bootloader checks after the transfer. Its `type` is the
    /// digest algorithm (``InitPacket/HashType/sha256`` for Secure DFU); its `bytes` the digest as
    /// stored in the packet: for SHA-256, the digest **byte-reversed**.
    public typealias Hash = InitPacket.TypedBytes<InitPacket.HashType>

    /// `BootValidation`: how the bootloader validates the image at every boot, and the method's
    /// data (empty for generated CRC and SHA-256; a signature for ECDSA).
    public typealias BootValidation = InitPacket.TypedBytes<InitPacket.ValidationType>

    /// `fw_version` (field 1): the version of the image (for SD+BL, of the bootloader).
    public private(set) var fwVersion: UInt32?
    /// `hw_version` (field 2): the hardware version the image is built for.
    public private(set) var hwVersion: UInt32?
    /// `sd_req` (field 3): SoftDevice firmware IDs the image may run on, in packet order.
    public private(set) var sdReq: [UInt32] = []
    /// `type` (field 4): what kind of image this is.
    public private(set) var type: InitPacket.FirmwareType?
    /// `sd_size` (field 5): the SoftDevice part's size in bytes.
    public private(set) var sdSize: UInt32?
    /// `bl_size` (field 6): the bootloader part's size in bytes.
    public private(set) var blSize: UInt32?
    /// `app_size` (field 7): the application's size in bytes.
    public private(set) var appSize: UInt32?
    /// `hash` (field 8).
    public private(set) var hash: Hash?
    /// `is_debug` (field 9): asks a debug bootloader to skip version checks.
    public private(set) var isDebug: Bool?
    /// `boot_validation` (field 10), in packet order.
    public private(set) var bootValidations: [BootValidation] = []
    /// The serialized message exactly as found in the packet.
    public private(set) var rawBytes: Data = Data()

    /// Limits from the SDK's `dfu-cc.options`: a bootloader cannot decode more than this.
    static let maxSDReqCount = 16
    static let maxHashSize = 32
    static let maxBootValidationCount = 3
    static let maxBootValidationSize = 64

    /// Decodes the message in `bytes` (a slice of the whole packet).
    init(decoding bytes: Data, fileName: String) throws(OTAError) {
        rawBytes = Data(bytes)
        var reader = ProtobufReader(bytes, fileName: fileName)
        var sawHash = false
        while let field = try reader.next() {
            switch field.number {
            case 1: fwVersion = try reader.uint32(field, "InitCommand.fw_version")
            case 2: hwVersion = try reader.uint32(field, "InitCommand.hw_version")
            case 3:
                switch field.value {
                case .varint:
                    sdReq.append(try reader.uint32(field, "InitCommand.sd_req"))
                case .lengthDelimited(let packed):
                    var packedReader = ProtobufReader(packed, fileName: fileName)
                    while !packedReader.isAtEnd {
                        let wide = try packedReader.readVarint()
                        guard let value = UInt32(exactly: wide) else {
                            throw reader.error("InitCommand.sd_req value \(wide) is out of range (packed at byte \(field.offset))")
                        }
                        sdReq.append(value)
                        guard sdReq.count <= Self.maxSDReqCount else {
                            throw reader.error("InitCommand.sd_req has more than \(Self.maxSDReqCount) entries")
                        }
                    }
                default:
                    throw reader.wrongType(field, "InitCommand.sd_req", expected: "varint or packed")
                }
                guard sdReq.count <= Self.maxSDReqCount else {
                    throw reader.error("InitCommand.sd_req has more than \(Self.maxSDReqCount) entries")
                }
            case 4: type = InitPacket.FirmwareType(rawValue: try reader.uint32(field, "InitCommand.type"))
            case 5: sdSize = try reader.uint32(field, "InitCommand.sd_size")
            case 6: blSize = try reader.uint32(field, "InitCommand.bl_size")
            case 7: appSize = try reader.uint32(field, "InitCommand.app_size")
            case 8:
                guard !sawHash else { throw reader.error("InitCommand.hash appears twice (at byte \(field.offset))") }
                sawHash = true
                hash = try decodeHash(try reader.message(field, "InitCommand.hash"), fileName: fileName, reader)
            case 9: isDebug = try reader.varint(field, "InitCommand.is_debug") != 0
            case 10:
                let validation = try decodeBootValidation(
                    try reader.message(field, "InitCommand.boot_validation"), fileName: fileName, reader
                )
                bootValidations.append(validation)
                guard bootValidations.count <= Self.maxBootValidationCount else {
                    throw reader.error("InitCommand.boot_validation has more than \(Self.maxBootValidationCount) entries")
                }
            default:
                continue  // Unknown fields are skipped, as protobuf requires.
            }
        }
    }

    private func decodeHash(_ bytes: Data, fileName: String, _ parent: ProtobufReader) throws(OTAError) -> Hash {
        let (type, digest) = try decodeTypeAndBytes(
            bytes, fileName: fileName, parent, fields: ("Hash.hash_type", "Hash.hash"),
            missing: ("InitCommand.hash has no hash_type", "InitCommand.hash has no hash bytes"), maximumSize: Self.maxHashSize
        ) { "InitCommand.hash is \($0) bytes, more than \(Self.maxHashSize)" }
        return Hash(type: InitPacket.HashType(rawValue: type), bytes: digest)
    }

    private func decodeBootValidation(_ bytes: Data, fileName: String, _ parent: ProtobufReader) throws(OTAError) -> BootValidation {
        let (type, data) = try decodeTypeAndBytes(
            bytes, fileName: fileName, parent, fields: ("BootValidation.type", "BootValidation.bytes"),
            missing: ("InitCommand.boot_validation has no type", "InitCommand.boot_validation has no bytes"),
            maximumSize: Self.maxBootValidationSize
        ) { "InitCommand.boot_validation bytes are \($0) long, more than \(Self.maxBootValidationSize)" }
        return BootValidation(type: InitPacket.ValidationType(rawValue: type), bytes: data)
    }

    /// Decodes the `{ 1: enum type; 2: bytes }` message that `Hash` and `BootValidation` both
    /// are; `fields` names the two fields, `missing` says what to report when either is absent,
    /// `tooLong` words the error for more than `maximumSize` bytes.
    private func decodeTypeAndBytes(
        _ bytes: Data,
        fileName: String,
        _ parent: ProtobufReader,
        fields: (type: String, bytes: String),
        missing: (type: String, bytes: String),
        maximumSize: Int,
        tooLong: (Int) -> String
    ) throws(OTAError) -> (type: UInt32, bytes: Data) {
        var reader = ProtobufReader(bytes, fileName: fileName)
        var type: UInt32?
        var data: Data?
        while let field = try reader.next() {
            switch field.number {
            case 1: type = try reader.uint32(field, fields.type)
            case 2: data = try reader.message(field, fields.bytes)
            default: continue
            }
        }
        guard let type else { throw parent.error(missing.type) }
        guard let data else { throw parent.error(missing.bytes) }
        guard data.count <= maximumSize else { throw parent.error(tooLong(data.count)) }
        return (type, Data(data))
    }
}
