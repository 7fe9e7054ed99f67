import Foundation
import OTACore
import OTATrust

/// Checks a Secure DFU package's init packets against the keys the user trusts, before
/// connecting: each packet must be signed (`signed_command`, ECDSA P-256 with SHA-256) and its
/// signature over the serialized `Command` must verify with one of the keys.
///
/// nrfutil stores the signature as r and s, 32 bytes each, each little-endian (as the
/// bootloader's `nrf_crypto` wants them); they are reversed here into the usual big-endian r‖s.
public struct DFUSignatureVerification: SignatureVerification {
    /// The check.
    public init() {}

    public func verify(_ images: [FirmwareImage], trusting keys: [TrustedKey]) throws(OTAError) -> [String] {
        let candidates = keys.filter { $0.algorithm == .ecdsaP256 }
        let trusted = keys.map(\.description).joined(separator: ", ")
        guard !candidates.isEmpty else {
            throw OTAError(.invalidImage, "Nordic Secure DFU packages are signed with ECDSA P-256, and none of the trusted keys is one (\(trusted))")
        }
        var notes: [String] = []
        for image in images {
            guard let bytes = image.attachments[NordicDFUClient.initPacketKey] else {
                throw OTAError(.invalidImage, "\(image.name) has no init packet to check a signature in, and keys are trusted for this update")
            }
            let packet = try InitPacket(bytes: bytes, name: image.name.replacingOccurrences(of: ".bin", with: ".dat"))
            guard let signature = packet.signature, let command = packet.signedCommand else {
                throw OTAError(
                    .invalidImage,
                    "\(packet.name) is not signed, but this update trusts only firmware signed by \(trusted): sign it with nrfutil pkg generate --key-file, or drop the key"
                )
            }
            guard signature.type == .ecdsaP256SHA256, signature.bytes.count == 64 else {
                throw OTAError(
                    .invalidImage,
                    "\(packet.name) is signed with \(signature.type) (\(signature.bytes.count) bytes), which ota cannot check; expected ECDSA P-256 (64 bytes)")
            }
            let raw = InitPacket.bigEndianSignature(signature.bytes)
            guard let key = candidates.first(where: { $0.verifies(raw, of: command) }) else {
                throw OTAError(
                    .invalidImage,
                    "\(packet.name)'s signature does not verify with \(trusted): it was signed with another key (a Secure DFU package does not say which) or changed after signing"
                )
            }
            notes.append("\(packet.name): signature verified with \(key)")
        }
        return notes
    }
}
