import Foundation
import OTACore
import OTATrust

/// Checks MCUboot images against the keys the user trusts, before connecting, as MCUboot's
/// `bootutil_img_validate()` will: the signature TLV (ECDSA P-256 over the hashed region, or
/// Ed25519 over its SHA-256 digest, as `imgtool sign` makes them) must verify with a trusted key;
/// the key-hash TLV, when present, names the key the image expects.
public struct MCUbootSignatureVerification: SignatureVerification {
    /// The check.
    public init() {}

    public func verify(_ images: [FirmwareImage], trusting keys: [TrustedKey]) throws(OTAError) -> [String] {
        let trusted = keys.map(\.description).joined(separator: ", ")
        var notes: [String] = []
        for firmware in images {
            let image: MCUbootImage
            do {
                image = try MCUbootImage(reading: firmware)
            } catch {
                throw OTAError(.invalidImage, "\(MessageText.name(firmware.name)): \(error)")
            }
            let name = MessageText.name(firmware.name)
            let signatures = image.tlvs.filter { $0.type == .ecdsa || $0.type == .ed25519 }
            guard !signatures.isEmpty else {
                throw OTAError(
                    .invalidImage,
                    "\(name) is not signed, but this update trusts only firmware signed by \(trusted): sign it with imgtool sign --key, or drop the key")
            }
            let keyHash = image.tlvs.first { $0.type == .keyHash }?.value
            let hashedLength = Int(image.header.headerSize) + Int(image.header.imageSize) + Int(image.header.protectedTLVSize)
            var verifiedBy: TrustedKey?
            for signature in signatures {
                // ECDSA signs the hashed region itself, which libcrypto digests: read into memory here,
                // once, before connecting (the one place an image is held whole; see decision 0042).
                let (algorithm, message): (TrustedKey.Algorithm, Data) =
                    signature.type == .ecdsa ? (.ecdsaP256, try firmware.prefix(hashedLength)) : (.ed25519, image.hash)
                verifiedBy = keys.first { $0.algorithm == algorithm && $0.verifies(signature.value, of: message) }
                if verifiedBy != nil { break }
            }
            guard let key = verifiedBy else {
                let expected =
                    keyHash.map { hash in
                        let match = keys.first { Data(SHA256.hash($0.subjectPublicKeyInfo)) == hash }
                        return match.map { "its key hash names \($0), but the signature does not verify: the image was changed after signing" }
                            ?? "it names a key with hash \(Hex.bytes(hash.prefix(8))), which is none of them"
                    } ?? "it names no key"
                let kinds = signatures.map(\.type.meaning).joined(separator: ", ")
                throw OTAError(.invalidImage, "\(name)'s \(kinds) does not verify with \(trusted): \(expected)")
            }
            notes.append("\(name): signature verified with \(key)")
        }
        return notes
    }
}
