import Foundation
import OTACore

#if canImport(CryptoKit)
import CryptoKit
#else
import CCrypto
#endif

/// Every call into the cryptography library, in one file: OpenSSL's libcrypto on Linux,
/// CryptoKit on Apple platforms. Signatures are only ever verified here, never made.
enum LibCrypto {
    /// A P-256 SubjectPublicKeyInfo's DER before its 65-byte point. (Arrays, not `Data`: a
    /// global `Data` keeps its storage behind a tagged pointer, which LeakSanitizer cannot follow
    /// and so reports as leaked.)
    static let p256SPKIPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01,
        0x07, 0x03, 0x42, 0x00,
    ]
    /// An Ed25519 SubjectPublicKeyInfo's DER before its 32-byte key.
    static let ed25519SPKIPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]

    /// The public key in a PEM file: a public key, or a private key whose public half is taken.
    static func publicKey(pem: Data) -> (TrustedKey.Algorithm, Data)? {
        #if canImport(CryptoKit)
        guard let text = String(data: pem, encoding: .utf8) else { return nil }
        if let key = try? P256.Signing.PublicKey(pemRepresentation: text) { return (.ecdsaP256, key.x963Representation) }
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: text) { return (.ecdsaP256, key.publicKey.x963Representation) }
        let der = pemBody(text)
        if let der, der.count == ed25519SPKIPrefix.count + 32, der.starts(with: ed25519SPKIPrefix) { return (.ed25519, der.suffix(32)) }
        // An Ed25519 private key (PKCS #8): the seed is the last 32 bytes.
        if let der, der.count == 48, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32)) {
            return (.ed25519, key.publicKey.rawRepresentation)
        }
        return nil
        #else
        let key: OpaquePointer? = pem.withUnsafeBytes { raw in
            let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count))
            defer { BIO_free(bio) }
            if let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) { return key }
            _ = BIO_ctrl(bio, BIO_CTRL_RESET, 0, nil)
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let key else { return nil }
        defer { EVP_PKEY_free(key) }
        var length: Int32 = i2d_PUBKEY(key, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        length = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(key, &cursor)
        }
        let spki = Data(der.prefix(Int(max(0, length))))
        if spki.count == p256SPKIPrefix.count + 65, spki.starts(with: p256SPKIPrefix) { return (.ecdsaP256, spki.suffix(65)) }
        if spki.count == ed25519SPKIPrefix.count + 32, spki.starts(with: ed25519SPKIPrefix) { return (.ed25519, spki.suffix(32)) }
        return nil
        #endif
    }

    #if canImport(CryptoKit)
    private static func pemBody(_ text: String) -> Data? {
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Data(base64Encoded: body)
    }
    #endif

    /// Whether `signature` (DER, as MCUboot stores it, or 64 raw bytes r‖s big-endian) is an
    /// ECDSA P-256 signature of SHA-256(`message`) by `publicKey` (65-byte uncompressed point).
    static func verifyECDSAP256(signature: Data, message: Data, publicKey: Data) -> Bool {
        #if canImport(CryptoKit)
        guard let key = try? P256.Signing.PublicKey(x963Representation: publicKey) else { return false }
        let parsed =
            signature.count == 64
            ? try? P256.Signing.ECDSASignature(rawRepresentation: signature) : try? P256.Signing.ECDSASignature(derRepresentation: signature)
        guard let parsed else { return false }
        return key.isValidSignature(parsed, for: message)
        #else
        let der = signature.count == 64 ? derSignature(raw: signature) : signature
        guard let der else { return false }
        return verify(spki: Data(p256SPKIPrefix) + publicKey, signature: der, message: message, digest: EVP_sha256())
        #endif
    }

    /// Whether `signature` (64 bytes) is an Ed25519 signature of `message` by `publicKey` (32 bytes).
    static func verifyEd25519(signature: Data, message: Data, publicKey: Data) -> Bool {
        #if canImport(CryptoKit)
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(signature, for: message)
        #else
        guard signature.count == 64, publicKey.count == 32 else { return false }
        return verify(spki: Data(ed25519SPKIPrefix) + publicKey, signature: signature, message: message, digest: nil)
        #endif
    }

    #if !canImport(CryptoKit)
    private static func verify(spki: Data, signature: Data, message: Data, digest: OpaquePointer?) -> Bool {
        defer { ERR_clear_error() }
        let key: OpaquePointer? = spki.withUnsafeBytes { raw in
            var cursor = raw.bindMemory(to: UInt8.self).baseAddress
            return d2i_PUBKEY(nil, &cursor, raw.count)
        }
        guard let key else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, key) == 1 else { return false }
        let result = signature.withUnsafeBytes { signatureBytes in
            message.withUnsafeBytes { messageBytes in
                EVP_DigestVerify(
                    context, signatureBytes.bindMemory(to: UInt8.self).baseAddress, signatureBytes.count,
                    messageBytes.bindMemory(to: UInt8.self).baseAddress, messageBytes.count)
            }
        }
        return result == 1
    }

    /// A 64-byte r‖s signature as DER.
    private static func derSignature(raw: Data) -> Data? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let bytes = [UInt8](raw)
        let r = BN_bin2bn(bytes, 32, nil)
        let s = Array(bytes[32...]).withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else { return nil }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return Data(der)
    }
    #endif
}
