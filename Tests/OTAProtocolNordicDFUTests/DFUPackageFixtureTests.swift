import Foundation
import OTACore
import OTAProtocolNordicDFU
import Testing

/// The packages `nrfutil pkg generate` (pc-nrfutil 6.1.7) produced, parsed with the values it
/// reported for them.
@Suite struct DFUPackageFixtureTests {
    @Test func unsignedApplication() throws {
        let package = try DFUPackage(contentsOf: Fixture.url("app-unsigned", "zip"))
        #expect(package.name == "app-unsigned.zip")
        #expect(package.manifest?.application == DFUManifest.Entry(binFile: "app.bin", datFile: "app.dat"))
        #expect(package.parts.map(\.kind) == [.application])
        let part = try #require(package.application)
        #expect(part.binFile == "app.bin")
        #expect(part.datFile == "app.dat")
        #expect(part.image.count == 3072)
        #expect(part.initPacketBytes == (try Fixture.data("app", "dat")))
        let command = try #require(part.initPacket.command)
        #expect(command.fwVersion == 3)
        #expect(command.hwVersion == 52)
        #expect(command.sdReq == [0x0100])
        #expect(command.type == .application)
        #expect(command.appSize == 3072)
        #expect(!part.initPacket.isSigned)
        // Secure DFU stores the SHA-256 of the image byte-reversed.
        #expect(hex(part.imageSHA256) == Fixture.appSHA256)
        #expect(hex(try #require(command.hash).bytes) == Fixture.appInitPacketHash)
        #expect(Array(try #require(command.hash).bytes) == part.imageSHA256.reversed())
        // Unsigned application updates are allowed by bootloaders built for it: no warning.
        #expect(package.warnings.isEmpty)
    }

    @Test func imageBytesAreTheBinFromTheZip() throws {
        let package = try DFUPackage(contentsOf: Fixture.url("app-unsigned", "zip"))
        #expect(package.application?.image.bytes == (try Fixture.data("app", "bin")))
        #expect(package.application?.image.attachments == ["init-packet": try Fixture.data("app", "dat")])
        #expect(package.application?.image.crc32 == CRC32.checksum(try Fixture.data("app", "bin")))
    }

    @Test func signedApplication() throws {
        let package = try DFUPackage(contentsOf: Fixture.url("app-signed", "zip"))
        let part = try #require(package.application)
        #expect(part.initPacket.isSigned)
        #expect(part.initPacket.signature?.bytes.count == 64)
        #expect(part.initPacket.command?.fwVersion == 0x01_0203)
        #expect(part.initPacket.command?.sdReq == [0x0101, 0x00B7])
        #expect(hex(try #require(part.initPacket.command?.hash).bytes) == Fixture.appInitPacketHash)
    }

    @Test(arguments: [
        ("app-boot-sha256", InitPacket.ValidationType.sha256, 0),
        ("app-boot-ecdsa", InitPacket.ValidationType.ecdsaP256SHA256, 64),
    ])
    func bootValidation(fixture: String, type: InitPacket.ValidationType, byteCount: Int) throws {
        let package = try DFUPackage(contentsOf: Fixture.url(fixture, "zip"))
        let validations = try #require(package.application?.initPacket.command?.bootValidations)
        #expect(validations.map(\.type) == [type])
        #expect(validations.first?.bytes.count == byteCount)
    }

    @Test func softdeviceBootloaderAndApplicationInTransferOrder() throws {
        let package = try DFUPackage(contentsOf: Fixture.url("sd-bl-app", "zip"))
        #expect(package.parts.map(\.kind) == [.softdeviceBootloader, .application])
        #expect(package.images.map(\.name) == ["sd_bl.bin", "app.bin"])
        #expect(package.images.map { $0.attachments[DFUPackagePart.initPacketAttachment]?.count } == [149, 140])
        let system = package.parts[0]
        #expect(system.binFile == "sd_bl.bin")
        #expect(system.datFile == "sd_bl.dat")
        #expect(system.image.count == 6144)
        #expect(system.manifestSDSize == 4096)
        #expect(system.manifestBLSize == 2048)
        #expect(system.initPacket.command?.type == .softdeviceBootloader)
        #expect(system.initPacket.command?.sdSize == 4096)
        #expect(system.initPacket.command?.blSize == 2048)
        #expect(system.initPacket.command?.fwVersion == 2)
        #expect(hex(system.imageSHA256) == Fixture.sdBLSHA256)
        #expect(hex(try #require(system.initPacket.command?.hash).bytes) == Fixture.sdBLInitPacketHash)
        let app = package.parts[1]
        #expect(app.initPacket.command?.fwVersion == 6)
        #expect(app.initPacket.command?.sdReq == [0x0101])
        #expect(hex(app.imageSHA256) == Fixture.appSHA256)
    }

    @Test func bootloaderOnly() throws {
        let package = try DFUPackage(contentsOf: Fixture.url("bootloader", "zip"))
        #expect(package.parts.map(\.kind) == [.bootloader])
        let part = package.parts[0]
        #expect(part.binFile == "bl.bin")
        #expect(part.initPacket.command?.type == .bootloader)
        #expect(part.initPacket.command?.blSize == 2048)
        #expect(part.initPacket.command?.fwVersion == 7)
        #expect(hex(part.imageSHA256) == Fixture.blSHA256)
        #expect(hex(try #require(part.initPacket.command?.hash).bytes) == Fixture.blInitPacketHash)
    }

    @Test func deflatedPackage() throws {
        let package = try DFUPackage(contentsOf: Fixture.url("app-deflated", "zip"))
        #expect(package.application?.image.bytes == (try Fixture.data("app", "bin")))
    }

    @Test func plainBinaryAndInitPacket() throws {
        let package = try DFUPackage(binary: Fixture.url("app", "bin"), initPacket: Fixture.url("app", "dat"))
        #expect(package.name == "app.bin + app.dat")
        #expect(package.manifest == nil)
        #expect(package.parts.map(\.kind) == [.application])
        #expect(package.application?.initPacket.command?.appSize == 3072)
    }

    @Test func plainPairTakesItsKindFromTheInitPacket() throws {
        let files = try Fixture.files(of: "bootloader")
        let package = try DFUPackage(
            binary: #require(files["bl.bin"]), binaryName: "bl.bin",
            initPacket: #require(files["bl.dat"]), initPacketName: "bl.dat"
        )
        #expect(package.parts.map(\.kind) == [.bootloader])
    }

    @Test func inMemoryZip() throws {
        let package = try DFUPackage(zipData: Fixture.data("sd-bl-app", "zip"), name: "update.zip")
        #expect(package.name == "update.zip")
        #expect(package.parts.count == 2)
    }
}
