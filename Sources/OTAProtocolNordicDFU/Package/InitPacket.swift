import Foundation
import OTACore

/// A Secure DFU init packet (the `.dat` file): the protobuf `Packet` of Nordic's `dfu-cc.proto`,
/// decoded far enough to show and check it, with its bytes kept verbatim.
///
/// The packet is either unsigned (`Packet.command`) or signed (`Packet.signed_command`, which
/// adds a signature over the serialized ``InitCommand``). The device receives ``rawBytes``
/// unchanged as the DFU command object; nothing is ever re-serialized.
///
/// ```swift
/// let packet = try InitPacket(bytes: datBytes, name: "app.dat")
/// packet.command?.appSize   // 3072
/// packet.isSigned           // false
/// ```
public struct InitPacket: Sendable, Hashable {
    /// The signature of a signed packet: its algorithm, and the signature as stored (for ECDSA
    /// P-256: r and s, 32 bytes each, each byte-reversed).
    public typealias Signature = TypedBytes<SignatureType>

    /// The packet exactly as read from the file: what is sent to the device.
    public let rawBytes: Data
    /// The file name the packet was read from ("app.dat"), used in messages.
    public let name: String
    /// The signature, for a signed packet.
    public let signature: Signature?
    /// The serialized `InitCommand` (`Command.init`) a signed packet's signature covers, exactly
    /// as in the file: nrfutil signs `init_command.SerializeToString()`.
    public let signedCommand: Data?
    /// `Command.op_code`, if present (``OpCode/initialize`` in every real packet).
    public let opCode: OpCode?
    /// `Command.init`: the description of the image, if present.
    public let command: InitCommand?

    /// An ECDSA P-256 signature as stored (r and s, each byte-reversed) in the usual big-endian
    /// r‖s order that verifiers take.
    public static func bigEndianSignature(_ stored: Data) -> Data {
        Data(stored.prefix(32).reversed()) + Data(stored.suffix(32).reversed())
    }

    /// Whether the packet is signed (`Packet.signed_command`).
    public var isSigned: Bool { signature != nil }

    /// Limit from the SDK's `dfu-cc.options`: a bootloader cannot decode a longer signature.
    static let maxSignatureSize = 64

    /// Decodes an init packet.
    ///
    /// - Parameters:
    ///   - bytes: The contents of the `.dat` file.
    ///   - name: The file name, which starts every error message.
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason, such as
    ///   `app.dat: truncated protobuf at byte 12`, when the bytes are not a well-formed packet.
    public init(bytes: Data, name: String = "init packet") throws(OTAError) {
        let bytes = bytes.startIndex == 0 ? bytes : Data(bytes)
        self.rawBytes = bytes
        self.name = name
        guard !bytes.isEmpty else {
            throw OTAError(.invalidImage, "\(name): init packet is empty")
        }

        var reader = ProtobufReader(bytes, fileName: name)
        var unsignedCommand: Data?
        var signedPacket: Data?
        while let field = try reader.next() {
            switch field.number {
            case 1: unsignedCommand = try reader.onlyMessage(field, "Packet.command", previous: unsignedCommand)
            case 2: signedPacket = try reader.onlyMessage(field, "Packet.signed_command", previous: signedPacket)
            default:
                continue
            }
        }

        let commandBytes: Data
        switch (unsignedCommand, signedPacket) {
        case (.some, .some):
            throw reader.error("holds both command and signed_command; a packet has one or the other")
        case (nil, nil):
            throw reader.error("no command or signed_command in the init packet")
        case (.some(let command), nil):
            commandBytes = command
            signature = nil
        case (nil, .some(let signed)):
            (commandBytes, signature) = try Self.decodeSignedCommand(signed, fileName: name)
        }
        let initBytes: Data?
        (opCode, command, initBytes) = try Self.decodeCommand(commandBytes, fileName: name)
        signedCommand = signature == nil ? nil : initBytes
    }

    /// Decodes `SignedCommand { 1: Command; 2: SignatureType; 3: bytes signature }`.
    private static func decodeSignedCommand(
        _ bytes: Data,
        fileName: String
    ) throws(OTAError) -> (command: Data, signature: Signature) {
        var reader = ProtobufReader(bytes, fileName: fileName)
        var command: Data?
        var type: UInt32?
        var signature: Data?
        while let field = try reader.next() {
            switch field.number {
            case 1: command = try reader.onlyMessage(field, "SignedCommand.command", previous: command)
            case 2: type = try reader.uint32(field, "SignedCommand.signature_type")
            case 3: signature = try reader.message(field, "SignedCommand.signature")
            default: continue
            }
        }
        guard let command else { throw reader.error("signed_command has no command") }
        guard let type else { throw reader.error("signed_command has no signature_type") }
        guard let signature else { throw reader.error("signed_command has no signature") }
        guard signature.count <= maxSignatureSize else {
            throw reader.error("signature is \(signature.count) bytes, more than \(maxSignatureSize)")
        }
        return (command, Signature(type: SignatureType(rawValue: type), bytes: Data(signature)))
    }

    /// Decodes `Command { 1: OpCode op_code; 2: InitCommand init }`.
    private static func decodeCommand(
        _ bytes: Data,
        fileName: String
    ) throws(OTAError) -> (OpCode?, InitCommand?, Data?) {
        var reader = ProtobufReader(bytes, fileName: fileName)
        var opCode: OpCode?
        var initCommand: InitCommand?
        var initBytes: Data?
        while let field = try reader.next() {
            switch field.number {
            case 1: opCode = OpCode(rawValue: try reader.uint32(field, "Command.op_code"))
            case 2:
                guard initCommand == nil else { throw reader.error("Command.init appears twice (at byte \(field.offset))") }
                let message = try reader.message(field, "Command.init")
                initBytes = Data(message)
                initCommand = try InitCommand(decoding: message, fileName: fileName)
            default: continue
            }
        }
        return (opCode, initCommand, initBytes)
    }
}
