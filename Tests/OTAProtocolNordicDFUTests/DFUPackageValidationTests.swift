import Foundation
import OTACore
import OTAProtocolNordicDFU
import Testing

/// Packages that must be refused before any connection, each with one line naming file and field.
@Suite struct DFUPackageValidationTests {
    private func open(_ zip: Data, name: String = "app.zip") -> String {
        expectInvalid { _ = try DFUPackage(zipData: zip, name: name) }
    }

    @Test func sizeMismatch() throws {
        let zip = try Fixture.modifiedAppZip { $0["app.bin"]?.removeLast(4) }
        #expect(open(zip) == "app.zip: app.dat: app_size is 3072 but app.bin has 3068 bytes")
    }

    @Test func wrongHash() throws {
        let zip = try Fixture.modifiedAppZip { files in
            files["app.bin"]?[100] ^= 0x01
        }
        let message = open(zip)
        #expect(
            message.hasPrefix(
                "app.zip: app.dat: hash does not match app.bin (init packet has \(Fixture.appInitPacketHash), byte-reversed SHA-256 of app.bin is "))
    }

    @Test func hashNotByteReversed() throws {
        let bin = try Fixture.data("app", "bin")
        let initCommand = TestProtobuf.initCommand(appSize: UInt64(bin.count), hash: SHA256.hash(bin))
        let message = expectInvalid {
            _ = try DFUPackage(binary: bin, binaryName: "app.bin", initPacket: Data(TestProtobuf.unsignedPacket(initCommand)), initPacketName: "app.dat")
        }
        #expect(message == "app.dat: hash is the SHA-256 of app.bin in big-endian order; bootloaders expect it byte-reversed")
    }

    @Test func hashTypeMustBeSHA256() throws {
        let bin = try Fixture.data("app", "bin")
        let initCommand = TestProtobuf.initCommand(appSize: UInt64(bin.count), hashType: 1, hash: [1, 2, 3, 4])
        let message = expectInvalid {
            _ = try DFUPackage(binary: bin, binaryName: "app.bin", initPacket: Data(TestProtobuf.unsignedPacket(initCommand)), initPacketName: "app.dat")
        }
        #expect(message == "app.dat: hash_type is CRC; Secure DFU bootloaders need SHA256")
    }

    @Test func missingAppSize() throws {
        let bin = try Fixture.data("app", "bin")
        let initCommand = TestProtobuf.initCommand(hash: SHA256.hash(bin).reversed())
        let message = expectInvalid {
            _ = try DFUPackage(binary: bin, binaryName: "app.bin", initPacket: Data(TestProtobuf.unsignedPacket(initCommand)), initPacketName: "app.dat")
        }
        #expect(message == "app.dat: app_size is missing (required for application)")
    }

    @Test func softdeviceBootloaderSizesMustAddUp() throws {
        var files = try Fixture.files(of: "sd-bl-app")
        files["sd_bl.bin"]?.append(contentsOf: [0, 0, 0, 0])
        let zip = makeZip(files.keys.sorted().map { TestZipFile($0, files[$0] ?? Data()) })
        #expect(open(zip, name: "sd-bl-app.zip") == "sd-bl-app.zip: sd_bl.dat: sd_size 4096 + bl_size 2048 = 6144 but sd_bl.bin has 6148 bytes")
    }

    @Test func manifestSizesMustAgreeWithTheInitPacket() throws {
        var files = try Fixture.files(of: "sd-bl-app")
        let manifest = String(decoding: try #require(files["manifest.json"]), as: UTF8.self)
        files["manifest.json"] = Data(manifest.replacingOccurrences(of: "\"sd_size\": 4096", with: "\"sd_size\": 4000").utf8)
        let zip = makeZip(files.keys.sorted().map { TestZipFile($0, files[$0] ?? Data()) })
        #expect(open(zip, name: "sd-bl-app.zip") == "sd-bl-app.zip: manifest.json: softdevice_bootloader sd_size is 4000 but sd_bl.dat says 4096")
    }

    @Test func typeMustMatchTheManifestEntry() throws {
        let files = try Fixture.files(of: "bootloader")
        let manifest = #"{"manifest": {"application": {"bin_file": "bl.bin", "dat_file": "bl.dat"}}}"#
        let zip = makeZip([
            TestZipFile("manifest.json", manifest), TestZipFile("bl.bin", files["bl.bin"] ?? Data()),
            TestZipFile("bl.dat", files["bl.dat"] ?? Data()),
        ])
        #expect(open(zip, name: "bl.zip") == "bl.zip: bl.dat: type is BOOTLOADER but manifest.json lists it as application")
    }

    @Test func missingDatFile() throws {
        let zip = try Fixture.modifiedAppZip { files in
            files["manifest.json"] = Data(#"{"manifest": {"application": {"bin_file": "app.bin"}}}"#.utf8)
        }
        #expect(open(zip) == "app.zip: manifest.json: application has no dat_file (Secure DFU needs an init packet)")
    }

    @Test func referencedFileNotInTheArchive() throws {
        let zip = try Fixture.modifiedAppZip { $0["app.dat"] = nil }
        #expect(open(zip) == "app.zip: manifest.json: application.dat_file \"app.dat\" is not in the archive")
    }

    @Test func missingManifest() throws {
        let zip = try Fixture.modifiedAppZip { $0["manifest.json"] = nil }
        #expect(open(zip) == "app.zip: manifest.json is missing (is this a Nordic DFU package?)")
    }

    @Test(arguments: [
        ("{\"manifest\": ", "app.zip: manifest.json: not valid JSON"),
        ("[1, 2]", "app.zip: manifest.json: the top level should be an object"),
        ("{}", "app.zip: manifest.json: manifest is missing"),
        ("{\"manifest\": {\"application\": {\"dat_file\": \"app.dat\"}}}", "app.zip: manifest.json: manifest.application.bin_file is missing"),
        (
            "{\"manifest\": {\"application\": {\"bin_file\": 7, \"dat_file\": \"app.dat\"}}}",
            "app.zip: manifest.json: manifest.application.bin_file should be a string"
        ),
        (
            "{\"manifest\": {\"application\": null}}",
            "app.zip: manifest.json lists no firmware (expected application, bootloader, softdevice or softdevice_bootloader)"
        ),
    ])
    func invalidManifest(json: String, expected: String) throws {
        let zip = try Fixture.modifiedAppZip { $0["manifest.json"] = Data(json.utf8) }
        #expect(open(zip) == expected)
    }

    @Test func negativeManifestSize() throws {
        let zip = try Fixture.modifiedAppZip { files in
            files["manifest.json"] = Data(#"{"manifest": {"application": {"bin_file": "app.bin", "dat_file": "app.dat", "sd_size": -1}}}"#.utf8)
        }
        #expect(open(zip) == "app.zip: manifest.json: manifest.application.sd_size is -1, not a size in bytes")
    }

    @Test func invalidPartCombination() throws {
        let files = try Fixture.files(of: "sd-bl-app")
        let manifest = #"""
            {"manifest": {
                "softdevice": {"bin_file": "sd_bl.bin", "dat_file": "sd_bl.dat"},
                "bootloader": {"bin_file": "sd_bl.bin", "dat_file": "sd_bl.dat"},
                "application": {"bin_file": "app.bin", "dat_file": "app.dat"}}}
            """#
        var zipFiles = [TestZipFile("manifest.json", manifest)]
        for name in ["sd_bl.bin", "sd_bl.dat", "app.bin", "app.dat"] {
            zipFiles.append(TestZipFile(name, files[name] ?? Data()))
        }
        let message = open(makeZip(zipFiles), name: "mix.zip")
        #expect(
            message
                == "mix.zip: manifest.json: softdevice + bootloader cannot be combined; a package holds one of softdevice, bootloader or softdevice_bootloader, optionally with application"
        )
    }

    @Test func emptyImage() throws {
        let zip = try Fixture.modifiedAppZip { $0["app.bin"] = Data() }
        #expect(open(zip) == "app.zip: app.bin: image is empty")
    }

    @Test func truncatedInitPacketInsideAZip() throws {
        let zip = try Fixture.modifiedAppZip { $0["app.dat"]?.removeLast(10) }
        #expect(open(zip) == "app.zip: app.dat: truncated protobuf at byte 1: field 1 declares 67 bytes but only 57 remain")
    }

    @Test func unknownWireTypeInsideAZip() throws {
        let zip = try Fixture.modifiedAppZip { $0["app.dat"] = Data([0x0B, 0x0C]) }
        #expect(open(zip) == "app.zip: app.dat: unsupported protobuf wire type 3 (groups are not used by init packets) for field 1 at byte 0")
    }

    @Test func inflateBombInsideAPackage() throws {
        var files = try Fixture.files(of: "app-unsigned")
        files["app.bin"] = nil
        var bomb = TestZipFile("app.bin", Data(repeating: 0, count: 600_000), deflate: true)
        bomb.declaredSize = 3072
        let zip = makeZip(files.keys.sorted().map { TestZipFile($0, files[$0] ?? Data()) } + [bomb])
        #expect(open(zip) == "app.zip: app.bin: inflates past its declared size of 3072 bytes")
    }

    @Test func pathTraversalInsideAPackage() throws {
        let zip = try Fixture.modifiedAppZip { $0["../evil.bin"] = Data("x".utf8) }
        #expect(open(zip) == "app.zip: \"../evil.bin\": path traversal in entry name")
    }

    @Test func plainPairWithMissingFile() throws {
        let missing = URL(fileURLWithPath: "/nonexistent/app.dat")
        let message = expectInvalid { _ = try DFUPackage(binary: Fixture.url("app", "bin"), initPacket: missing) }
        #expect(message == "/nonexistent/app.dat: no such file")
    }

    @Test func plainPairWithoutType() throws {
        let initCommand = TestProtobuf.initCommand(type: nil, appSize: 3)
        let message = expectInvalid {
            _ = try DFUPackage(
                binary: Data([1, 2, 3]), binaryName: "x.bin", initPacket: Data(TestProtobuf.unsignedPacket(initCommand)), initPacketName: "x.dat")
        }
        #expect(message == "x.dat: type is missing, so what x.bin holds is unknown")
    }

    @Test func signatureOfTheWrongLength() throws {
        let bin = try Fixture.data("app", "bin")
        let initCommand = TestProtobuf.initCommand(appSize: UInt64(bin.count), hash: SHA256.hash(bin).reversed())
        let packet = TestProtobuf.signedPacket(initCommand, signature: [UInt8](repeating: 7, count: 63))
        let message = expectInvalid {
            _ = try DFUPackage(binary: bin, binaryName: "app.bin", initPacket: Data(packet), initPacketName: "app.dat")
        }
        #expect(message == "app.dat: signature is 63 bytes, ECDSA P-256 needs 64")
    }

    @Test func consistentHandMadePacketIsAccepted() throws {
        let bin = try Fixture.data("app", "bin")
        let initCommand = TestProtobuf.initCommand(
            sdReq: [0xB7, 0x101], packedSDReq: false, appSize: UInt64(bin.count), hash: SHA256.hash(bin).reversed()
        )
        let package = try DFUPackage(binary: bin, binaryName: "app.bin", initPacket: Data(TestProtobuf.unsignedPacket(initCommand)), initPacketName: "app.dat")
        #expect(package.application?.initPacket.command?.sdReq == [0xB7, 0x101])
    }
}
