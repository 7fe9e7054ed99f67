import Foundation
import OTACore
import OTATrust
import Testing

@testable import OTAProtocolNordicDFU

/// Signatures of real nrfutil packages checked on the host (`DFUSignatureVerification`) and by
/// the bootloader model with a compiled-in key, against `test-key.pem` (the key that signed the
/// fixtures) and `other-key.pub.pem` (a key that signed nothing).
@Suite struct SignatureVerificationTests {
    static func key(_ name: String) throws -> TrustedKey {
        try TrustedKey(contentsOf: try Fixture.url(name, "pem"))
    }

    static func images(_ package: String) throws -> [FirmwareImage] {
        try #require(try NordicDFUProtocol.descriptor.containerFormat?.load(try Fixture.url(package, "zip")))
    }

    @Test func theSigningKeyReadsTheSameFromItsPrivateAndPublicFiles() throws {
        let privateKey = try Self.key("test-key")
        let publicKey = try Self.key("test-key.pub")
        #expect(privateKey.publicKey == publicKey.publicKey)
        #expect(privateKey.algorithm == .ecdsaP256)
        #expect(privateKey.publicKey.count == 65 && privateKey.publicKey.first == 0x04)
        #expect(try Self.key("other-key.pub").fingerprint != publicKey.fingerprint)
    }

    @Test(arguments: ["app-signed", "sd-bl-app", "bootloader", "app-boot-ecdsa"])
    func nrfutilSignaturesVerifyWithTheKeyThatMadeThem(package: String) throws {
        let images = try Self.images(package)
        let notes = try DFUSignatureVerification().verify(images, trusting: [try Self.key("test-key.pub")])
        #expect(notes.count == images.count)
        #expect(notes.allSatisfy { $0.contains("signature verified with test-key.pub.pem (ECDSA P-256") })
        // Among several trusted keys, the right one is found.
        #expect(try DFUSignatureVerification().verify(images, trusting: [try Self.key("other-key.pub"), try Self.key("test-key")]).count == images.count)
    }

    @Test func anotherKeyIsRefusedNamingTheKeysTrusted() throws {
        #expect {
            try DFUSignatureVerification().verify(try Self.images("app-signed"), trusting: [try Self.key("other-key.pub")])
        } throws: { error in
            let message = (error as? OTAError)?.message ?? ""
            return message.contains("app.dat's signature does not verify with other-key.pub.pem (ECDSA P-256, ") && !message.contains("\n")
        }
    }

    @Test func anUnsignedPackageIsRefusedWhenAKeyIsTrusted() throws {
        #expect {
            try DFUSignatureVerification().verify(try Self.images("app-unsigned"), trusting: [try Self.key("test-key.pub")])
        } throws: { ($0 as? OTAError)?.message.contains("app.dat is not signed, but this update trusts only firmware signed by test-key.pub.pem") == true }
    }

    /// Every byte of the signature and of the signed InitCommand matters.
    @Test func aFlippedByteOfTheSignatureOrTheCommandIsRefused() throws {
        let image = try #require(try Self.images("app-signed").first)
        let dat = try #require(image.attachments[NordicDFUClient.initPacketKey])
        let packet = try InitPacket(bytes: dat, name: "app.dat")
        let signature = try #require(packet.signature?.bytes)
        let command = try #require(packet.signedCommand)
        let key = try Self.key("test-key.pub")
        #expect(key.verifies(InitPacket.bigEndianSignature(signature), of: command))
        for index in [0, 17, 31, 32, 50, 63] {
            var flipped = signature
            flipped[flipped.startIndex + index] ^= 0x01
            #expect(!key.verifies(InitPacket.bigEndianSignature(flipped), of: command), "signature byte \(index)")
        }
        for index in stride(from: 0, to: command.count, by: 5) {
            var flipped = command
            flipped[flipped.startIndex + index] ^= 0x01
            #expect(!key.verifies(InitPacket.bigEndianSignature(signature), of: flipped), "command byte \(index)")
        }
        // And through the package: a .dat whose last signature byte is flipped.
        var tampered = image
        var bytes = dat
        let at = try #require(bytes.range(of: signature)).upperBound - 1
        bytes[at] ^= 0x01
        tampered.attachments[NordicDFUClient.initPacketKey] = bytes
        #expect(throws: OTAError.self) { try DFUSignatureVerification().verify([tampered], trusting: [key]) }
    }

    @Test func theBootloaderModelWithAKeyVerifiesAsARealOneDoes() throws {
        var configuration = NordicBootloaderModel.Configuration()
        configuration.installedSoftDevice = 0x0101
        configuration.publicKey = try Self.key("test-key.pub")
        let signed = try #require(Fixture.files(of: "app-signed")["app.dat"])
        #expect(NordicBootloaderModelTests.Bench(configuration: configuration).executeInit([UInt8](signed)) == [0x60, 0x04, 0x01])
        // Another key compiled in: Invalid Object, as nrf_dfu_validation_signature_check returns.
        configuration.publicKey = try Self.key("other-key.pub")
        #expect(NordicBootloaderModelTests.Bench(configuration: configuration).executeInit([UInt8](signed)) == [0x60, 0x04, 0x05])
        // A key compiled in requires a signature.
        let unsigned = try #require(Fixture.files(of: "app-unsigned")["app.dat"])
        #expect(NordicBootloaderModelTests.Bench(configuration: configuration).executeInit([UInt8](unsigned)) == [0x60, 0x04, 0x0B, 0x08])
    }
}
