import Foundation
import OTACore
import OTATrust
import Testing

@testable import OTAProtocolMCUmgr

/// Signatures of imgtool-made images checked on the host, against the keys that made them.
@Suite struct MCUbootSignatureTests {
    static func key(_ name: String) throws -> TrustedKey {
        try TrustedKey(pem: try Fixture.data(name), source: name)
    }

    static func image(_ name: String) throws -> FirmwareImage {
        try FirmwareImage(bytes: try Fixture.data(name), name: name)
    }

    @Test(arguments: [
        ("ecdsa-p256-4KB.bin", "test-ecdsa-p256.pub.pem"), ("ecdsa-p256-4KB.bin", "test-ecdsa-p256.pem"),
        ("security-counter-4KB.bin", "test-ecdsa-p256.pub.pem"), ("ed25519-4KB.bin", "test-ed25519.pub.pem"),
        ("ed25519-4KB.bin", "test-ed25519.pem"),
    ])
    func imgtoolSignaturesVerifyWithTheirKey(image: String, key: String) throws {
        let notes = try MCUbootSignatureVerification().verify([try Self.image(image)], trusting: [try Self.key(key)])
        #expect(notes == ["\(image): signature verified with \(try Self.key(key))"])
    }

    @Test func theKeyHashTLVNamesTheKeyTheImageExpects() throws {
        let image = try MCUbootImage(parsing: try Fixture.data("ecdsa-p256-4KB.bin"))
        let keyHash = try #require(image.tlvs.first { $0.type == .keyHash }?.value)
        #expect(Data(SHA256.hash(try Self.key("test-ecdsa-p256.pub.pem").subjectPublicKeyInfo)) == keyHash)
    }

    @Test func theOtherKeyIsRefusedNamingTheKeyTheImageWants() throws {
        #expect {
            try MCUbootSignatureVerification().verify([try Self.image("ecdsa-p256-4KB.bin")], trusting: [try Self.key("test-ed25519.pub.pem")])
        } throws: { error in
            let message = (error as? OTAError)?.message ?? ""
            return message.contains("ECDSA signature does not verify with test-ed25519.pub.pem (Ed25519")
                && message.contains("it names a key with hash ") && message.contains("which is none of them")
        }
    }

    @Test func anUnsignedImageIsRefusedWhenAKeyIsTrusted() throws {
        #expect {
            try MCUbootSignatureVerification().verify([try Self.image("unsigned-4KB.bin")], trusting: [try Self.key("test-ecdsa-p256.pub.pem")])
        } throws: { ($0 as? OTAError)?.message.contains("is not signed, but this update trusts only firmware signed by") == true }
    }

    @Test(arguments: ["ecdsa-p256-4KB.bin", "ed25519-4KB.bin"])
    func aFlippedSignatureByteIsRefusedAndSaysTheImageChanged(name: String) throws {
        let bytes = try Fixture.data(name)
        let image = try MCUbootImage(parsing: bytes)
        let key = try Self.key(name.hasPrefix("ecdsa") ? "test-ecdsa-p256.pub.pem" : "test-ed25519.pub.pem")
        for back in [1, 9, 33] {
            var flipped = bytes
            flipped[image.imageLength - back] ^= 0x01
            #expect(throws: OTAError.self, "\(name), byte \(back) from the end") {
                try MCUbootSignatureVerification().verify([try FirmwareImage(bytes: flipped, name: name)], trusting: [key])
            }
        }
        // A changed body fails the hash before the signature is even looked at.
        var body = bytes
        body[0x300] ^= 0x01
        #expect {
            try MCUbootSignatureVerification().verify([try FirmwareImage(bytes: body, name: name)], trusting: [key])
        } throws: { ($0 as? OTAError)?.message.contains("hash does not match its contents") == true }
    }

    @Test func aKeyFileThatIsNoKeyIsOneLine() {
        #expect {
            try TrustedKey(pem: Data("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n".utf8), source: "bad.pem")
        } throws: { ($0 as? OTAError)?.message == "key bad.pem: not a PEM ECDSA P-256 or Ed25519 key (public or private)" }
    }
}
