import Foundation
import OTACore
import Testing

@testable import OTAProtocolMCUmgr

@Suite struct MCUbootImageTests {
    @Test(arguments: ["unsigned-1B.bin", "unsigned-4KB.bin", "unsigned-200KB.bin", "unsigned-1MB.bin", "padded-confirmed-4KB.bin"])
    func agreesWithImgtoolOnEveryImage(name: String) throws {
        let image = try MCUbootImage(parsing: try Fixture.data(name))
        #expect(Hex.bytes(image.hash) == (try Fixture.imgtoolDigest(name)))
        #expect(Hex.bytes(image.fileSHA256) == (try Fixture.fileSHA256(name)))
        #expect(image.hash != image.fileSHA256)
        #expect(image.header.headerSize == 0x200)
    }

    @Test func readsTheHeaderAndTLVsOfAVersionedImage() throws {
        let image = try MCUbootImage(parsing: try Fixture.data("unsigned-4KB.bin"))
        #expect(image.version == MCUbootVersion(major: 1, minor: 2, revision: 3, build: 4))
        #expect(image.version.description == "1.2.3.4")
        #expect(image.header.imageSize == 4093)
        #expect(image.header.protectedTLVSize == 0)
        #expect(image.header.flags.isEmpty)
        #expect(image.tlvs.map(\.type) == [.sha256])
        #expect(image.imageLength == 0x200 + 4093 + 0x28)
        #expect(image.fileLength == image.imageLength)
    }

    @Test(arguments: [
        ("ecdsa-p256-4KB.bin", [MCUbootTLV.Kind.sha256, .keyHash, .ecdsa]),
        ("ed25519-4KB.bin", [.sha256, .keyHash, .ed25519]),
    ])
    func readsSignedImages(name: String, kinds: [MCUbootTLV.Kind]) throws {
        let image = try MCUbootImage(parsing: try Fixture.data(name))
        #expect(Set(image.tlvs.map(\.type)) == Set(kinds))
        #expect(image.protectedTLVs.isEmpty)
        #expect(Hex.bytes(image.fileSHA256) == (try Fixture.fileSHA256(name)))
    }

    @Test func readsTheSecurityCounterFromTheProtectedArea() throws {
        let image = try MCUbootImage(parsing: try Fixture.data("security-counter-4KB.bin"))
        #expect(image.protectedTLVs.map(\.type) == [.securityCounter])
        #expect(image.securityCounter == 5)
        #expect(image.version.description == "3.0.0.7")
        #expect(image.report.contains("security counter 5"))
    }

    @Test func aPaddedImageKeepsItsTrailerOutsideTheImage() throws {
        let image = try MCUbootImage(parsing: try Fixture.data("padded-confirmed-4KB.bin"))
        #expect(image.fileLength == 0x2000)
        #expect(image.imageLength < image.fileLength)
        #expect(image.report.contains("padding and trailer"))
    }

    @Test func theReportNamesBothDigests() throws {
        let image = try MCUbootImage(parsing: try Fixture.data("unsigned-4KB.bin"))
        #expect(image.report.contains("version 1.2.3.4"))
        #expect(image.report.contains(Hex.bytes(image.hash)))
        #expect(image.report.contains(Hex.bytes(image.fileSHA256)))
    }

    // MARK: - Broken images

    func refuse(_ bytes: Data, _ expected: (MCUbootImageError) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sourceLocation: sourceLocation) {
            try MCUbootImage(parsing: bytes)
        } throws: { error in
            guard let error = error as? MCUbootImageError else { return false }
            return expected(error) && !error.description.contains("\n")
        }
    }

    @Test func refusesABadMagic() throws {
        var bytes = try Fixture.data("unsigned-4KB.bin")
        bytes[0] = 0x00
        refuse(bytes) { if case .badMagic = $0 { true } else { false } }
        refuse(Data("PK\u{3}\u{4}not an image at all, a zip file".utf8)) { if case .badMagic = $0 { true } else { false } }
    }

    @Test func refusesEveryTruncation() throws {
        let bytes = try Fixture.data("security-counter-4KB.bin")
        for length in [0, 3, 31, 32, 511, 512, 4000, bytes.count - 200, bytes.count - 1] {
            #expect(throws: MCUbootImageError.self, "length \(length)") { try MCUbootImage(parsing: bytes.prefix(length)) }
        }
    }

    @Test func refusesAChangedBody() throws {
        var bytes = try Fixture.data("unsigned-4KB.bin")
        bytes[0x200 + 100] ^= 0x01
        refuse(bytes) { if case .hashMismatch = $0 { true } else { false } }
    }

    @Test func refusesAChangedProtectedTLV() throws {
        var bytes = try Fixture.data("security-counter-4KB.bin")
        let counter = 0x200 + 4093 + 8
        bytes[counter] = 9  // the security counter's value, which the hash covers
        refuse(bytes) { if case .hashMismatch = $0 { true } else { false } }
    }

    @Test func refusesATLVThatRunsPastItsArea() throws {
        var bytes = try Fixture.data("unsigned-4KB.bin")
        let firstTLV = 0x200 + 4093 + 4
        bytes[firstTLV + 2] = 0x40  // SHA-256 TLV claims 64 bytes in a 40-byte area
        refuse(bytes) { if case .tlvOverflow = $0 { true } else { false } }
    }

    @Test func refusesAnAreaSizeBeyondTheFile() throws {
        var bytes = try Fixture.data("unsigned-4KB.bin")
        let area = 0x200 + 4093
        bytes[area + 2] = 0xFF
        bytes[area + 3] = 0xFF
        refuse(bytes) { if case .tlvOverflow = $0 { true } else { false } }
    }

    @Test func refusesAMissingOrWrongTLVArea() throws {
        var bytes = try Fixture.data("unsigned-4KB.bin")
        bytes[0x200 + 4093] = 0x00
        refuse(bytes) { if case .missingTLVArea = $0 { true } else { false } }
        var protected = try Fixture.data("security-counter-4KB.bin")
        protected[0x200 + 4093] = 0x07  // 0x6907 where 0x6908 belongs
        refuse(protected) { if case .badTLVAreaMagic = $0 { true } else { false } }
    }

    @Test func refusesNoHashAndTwoHashes() throws {
        let bytes = try Fixture.data("unsigned-4KB.bin")
        let area = 0x200 + 4093
        var noHash = bytes
        noHash[area + 4] = 0x11  // the SHA-256 TLV renamed SHA-384
        refuse(noHash) { $0 == .noHash }
        // The area doubled: two SHA-256 TLVs.
        let tlv = bytes[(area + 4)..<(area + 40)]
        var twoHashes = Data(bytes.prefix(area)) + Data([0x07, 0x69, 76, 0]) + tlv + tlv
        refuse(twoHashes) { $0 == .multipleHashes(2) }
        twoHashes[area + 2] = 77
        refuse(twoHashes) { if case .tlvOverflow = $0 { true } else { false } }
    }

    @Test func everyCorruptionOfTheHashedBytesOrTheHashIsRefused() throws {
        let bytes = try Fixture.data("security-counter-4KB.bin")
        let image = try MCUbootImage(parsing: bytes)
        let hashed = Int(image.header.headerSize) + Int(image.header.imageSize) + Int(image.header.protectedTLVSize)
        let hashValue = hashed + 4 + 4  // area info, then the SHA-256 TLV's type and length
        for offset in Array(0..<32) + Array(stride(from: 32, to: hashed, by: 11)) + [hashed - 1] + Array(hashValue..<(hashValue + 32)) {
            var corrupt = bytes
            corrupt[offset] ^= 0x5A
            #expect(throws: MCUbootImageError.self, "a flipped byte at \(offset) passed") { try MCUbootImage(parsing: corrupt) }
        }
        // A signature byte is not covered by the hash (the device checks the signature), so it
        // parses: this side does not claim to verify signatures.
        var signature = bytes
        signature[image.imageLength - 1] ^= 0x5A
        #expect((try? MCUbootImage(parsing: signature)) != nil)
    }
}
