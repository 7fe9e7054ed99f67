import Foundation
import OTACore

extension TrustedKey {
    /// The largest key file read.
    public static let maximumFileSize = 64 << 10

    /// Reads a trusted key from a PEM file: a public key (`imgtool getpub --encoding pem`,
    /// `openssl pkey -pubout`), or a private key, of which only the public half is kept (`nrfutil
    /// keys generate` and `imgtool keygen` write private keys).
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` naming the file and what it lacks.
    public init(contentsOf url: URL) throws(OTAError) {
        let data = try BoundedFileRead.contents(
            of: url, limit: Self.maximumFileSize, code: .invalidParameter, subject: "key \(MessageText.name(url.path))",
            largest: "the \(Self.maximumFileSize >> 10) KiB a key file may be")
        try self.init(pem: data, source: url.lastPathComponent)
    }

    /// Reads a trusted key from PEM bytes; `source` names it in messages.
    public init(pem: Data, source: String) throws(OTAError) {
        guard let (algorithm, publicKey) = LibCrypto.publicKey(pem: pem) else {
            throw OTAError(.invalidParameter, "key \(MessageText.name(source)): not a PEM ECDSA P-256 or Ed25519 key (public or private)")
        }
        self.init(algorithm: algorithm, publicKey: publicKey, source: source)
    }

    /// The key as DER SubjectPublicKeyInfo, the form `imgtool` hashes into an image's key-hash TLV.
    public var subjectPublicKeyInfo: Data {
        switch algorithm {
        case .ecdsaP256: Data(LibCrypto.p256SPKIPrefix) + publicKey
        case .ed25519: Data(LibCrypto.ed25519SPKIPrefix) + publicKey
        }
    }

    /// Whether `signature` is this key's signature of `message`: for ECDSA P-256 of SHA-256 of
    /// the message (DER or 64 raw big-endian bytes), for Ed25519 of the message itself.
    public func verifies(_ signature: Data, of message: Data) -> Bool {
        switch algorithm {
        case .ecdsaP256: LibCrypto.verifyECDSAP256(signature: signature, message: message, publicKey: publicKey)
        case .ed25519: LibCrypto.verifyEd25519(signature: signature, message: message, publicKey: publicKey)
        }
    }
}
