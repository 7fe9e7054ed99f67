import Foundation

/// A public key the user trusts to sign firmware: from `--key FILE`, or a catalog family's
/// `keys`. A plain value — reading key files and checking signatures is `OTATrust`'s, so the
/// core stays free of cryptography libraries.
public struct TrustedKey: Sendable, Hashable, CustomStringConvertible {
    /// The signature algorithm the key is for.
    public enum Algorithm: String, Sendable, Hashable {
        /// ECDSA over P-256 with SHA-256 (Nordic Secure DFU, MCUboot `ecdsa-p256`).
        case ecdsaP256 = "ECDSA P-256"
        /// Ed25519 (MCUboot `ed25519`).
        case ed25519 = "Ed25519"
    }

    /// The algorithm.
    public var algorithm: Algorithm
    /// The public key: the uncompressed point (65 bytes, `04‖X‖Y`) for P-256, 32 bytes for Ed25519.
    public var publicKey: Data
    /// Where it came from (a file name), for messages.
    public var source: String

    /// A key.
    public init(algorithm: Algorithm, publicKey: Data, source: String) {
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.source = source
    }

    /// The first 8 bytes of the SHA-256 of ``publicKey``, in hexadecimal: how messages name a key.
    public var fingerprint: String { Hex.bytes(SHA256.hash(publicKey).prefix(8)) }

    /// "key.pem (ECDSA P-256, 1a2b3c4d5e6f7081)".
    public var description: String { "\(source) (\(algorithm.rawValue), \(fingerprint))" }
}

/// A protocol whose images carry signatures that the host can check before connecting, against
/// the keys the user trusts.
public protocol SignatureVerification: Sendable {
    /// Checks every image's signature against `keys`.
    ///
    /// - Returns: one note a line for the user ("app.dat: signed by key.pem (ECDSA P-256, …)").
    /// - Throws: ``OTAError/Code/invalidImage`` for an unsigned image, or one whose signature no
    ///   trusted key verifies, naming what was expected and what was found.
    func verify(_ images: [FirmwareImage], trusting keys: [TrustedKey]) throws(OTAError) -> [String]
}
