import Foundation
import OTACore
import Testing

@testable import OTAProtocolNordicDFU

@Suite struct InitPacketTests {
    // MARK: Packets written by nrfutil

    @Test func unsignedApplicationPacket() throws {
        let dat = try Fixture.data("app", "dat")
        let packet = try InitPacket(bytes: dat, name: "app.dat")
        #expect(!packet.isSigned)
        #expect(packet.signature == nil)
        #expect(packet.opCode == .initialize)
        #expect(packet.rawBytes == dat)
        let command = try #require(packet.command)
        #expect(command.fwVersion == 3)
        #expect(command.hwVersion == 52)
        #expect(command.sdReq == [0x0100])
        #expect(command.type == .application)
        #expect(command.appSize == 3072)
        #expect(command.sdSize == 0)
        #expect(command.blSize == 0)
        #expect(command.hash?.type == .sha256)
        #expect(hex(try #require(command.hash).bytes) == Fixture.appInitPacketHash)
        #expect(command.isDebug == false)
        #expect(command.bootValidations == [InitCommand.BootValidation(type: .generatedCRC, bytes: Data())])
    }

    @Test func signedApplicationPacketWithPackedSDReq() throws {
        let dat = try #require(Fixture.files(of: "app-signed")["app.dat"])
        let packet = try InitPacket(bytes: dat, name: "app.dat")
        #expect(packet.isSigned)
        #expect(packet.signature?.type == .ecdsaP256SHA256)
        #expect(
            hex(try #require(packet.signature).bytes)
                == "07c4086c62f2193a82894ef1f7ed2b3c19cb534336cdeac256272727ec29059350819738b0a757968c5e63fcc3750ee2710541d9bdc2e4aa26666f98b606a218")
        let command = try #require(packet.command)
        #expect(command.fwVersion == 0x01_0203)
        #expect(command.sdReq == [0x0101, 0x00B7])
        #expect(command.appSize == 3072)
        #expect(hex(try #require(command.hash).bytes) == Fixture.appInitPacketHash)
        // The signed bytes are the InitCommand exactly as embedded (fields 1..10, 0x43 bytes here).
        #expect(command.rawBytes.count == 0x43)
        #expect(command.rawBytes.first == 0x08)
        #expect(dat.range(of: command.rawBytes) != nil)
    }

    @Test func bootValidationPackets() throws {
        let sha = try InitPacket(bytes: #require(Fixture.files(of: "app-boot-sha256")["app.dat"]), name: "app.dat")
        #expect(sha.command?.bootValidations == [InitCommand.BootValidation(type: .sha256, bytes: Data())])
        #expect(sha.command?.fwVersion == 4)

        let ecdsa = try InitPacket(bytes: #require(Fixture.files(of: "app-boot-ecdsa")["app.dat"]), name: "app.dat")
        #expect(ecdsa.isSigned)
        let validation = try #require(ecdsa.command?.bootValidations.first)
        #expect(validation.type == .ecdsaP256SHA256)
        #expect(
            hex(validation.bytes)
                == "d33c3ac98841e0057db8dfe667b345bba6c87fb04e4c345b52d631ad214f744c30d15058ef9dc118f21531e424cfc3568383643033da9c2509a2f9cead31dda5")
    }

    @Test func softdeviceBootloaderPacket() throws {
        let packet = try InitPacket(bytes: #require(Fixture.files(of: "sd-bl-app")["sd_bl.dat"]), name: "sd_bl.dat")
        let command = try #require(packet.command)
        #expect(command.type == .softdeviceBootloader)
        #expect(command.fwVersion == 2)  // the bootloader version
        #expect(command.sdSize == 4096)
        #expect(command.blSize == 2048)
        #expect(command.appSize == 0)
        #expect(command.sdReq == [0x0101, 0x00B7])
        #expect(command.bootValidations.map(\.type) == [.generatedCRC, .generatedCRC])
        #expect(hex(try #require(command.hash).bytes) == Fixture.sdBLInitPacketHash)
    }

    // MARK: Hand-made packets

    @Test func unpackedRepeatedSDReq() throws {
        let initCommand = TestProtobuf.initCommand(sdReq: [0xB7, 0x101, 0xFFFE], packedSDReq: false, appSize: 10)
        let packet = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(initCommand)), name: "x.dat")
        #expect(packet.command?.sdReq == [0xB7, 0x101, 0xFFFE])
    }

    @Test func mixedPackedAndUnpackedSDReq() throws {
        var initCommand = TestProtobuf.field(3, varint: 0xB7)
        initCommand += TestProtobuf.field(3, bytes: TestProtobuf.varint(0x101) + TestProtobuf.varint(0x102))
        let packet = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(initCommand)), name: "x.dat")
        #expect(packet.command?.sdReq == [0xB7, 0x101, 0x102])
    }

    @Test func skipsUnknownFieldsOfEveryWireType() throws {
        var initCommand = TestProtobuf.initCommand(appSize: 7)
        initCommand += TestProtobuf.field(99, varint: 5)
        initCommand += TestProtobuf.key(100, 1) + [1, 2, 3, 4, 5, 6, 7, 8]
        initCommand += TestProtobuf.field(101, bytes: [9, 9, 9])
        initCommand += TestProtobuf.key(102, 5) + [1, 2, 3, 4]
        let packet = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(initCommand)), name: "x.dat")
        #expect(packet.command?.appSize == 7)
    }

    @Test func unknownEnumValuesAreKept() throws {
        let initCommand = TestProtobuf.initCommand(type: 9, appSize: 7, hashType: 7, hash: [1, 2])
        let packet = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(initCommand)), name: "x.dat")
        #expect(packet.command?.type == InitPacket.FirmwareType(rawValue: 9))
        #expect(packet.command?.type?.description == "unknown (9)")
        #expect(packet.command?.hash?.type.description == "unknown (7)")
    }

    // MARK: Malformed packets

    @Test func truncatedAtEveryByte() throws {
        let dat = try Fixture.data("app", "dat")
        for length in 1..<dat.count {
            let message = expectInvalid { _ = try InitPacket(bytes: dat.prefix(length), name: "app.dat") }
            #expect(message.hasPrefix("app.dat: "), "\(message)")
        }
    }

    @Test func truncatedVarintNamesTheByte() {
        // Packet.command of 3 bytes: op_code INIT, then a key whose varint never ends.
        let message = expectInvalid { _ = try InitPacket(bytes: Data([0x0A, 0x03, 0x08, 0x01, 0x80]), name: "app.dat") }
        #expect(message == "app.dat: truncated protobuf at byte 4")
    }

    @Test func lengthPastTheEnd() {
        let message = expectInvalid { _ = try InitPacket(bytes: Data([0x0A, 0x20, 0x08, 0x01]), name: "app.dat") }
        #expect(message == "app.dat: truncated protobuf at byte 1: field 1 declares 32 bytes but only 2 remain")
    }

    @Test(arguments: [3, 4, 6, 7])
    func refusesUnsupportedWireTypes(wireType: Int) {
        let bytes = Data(TestProtobuf.key(5, wireType) + [0, 0, 0, 0, 0, 0, 0, 0])
        let message = expectInvalid { _ = try InitPacket(bytes: bytes, name: "app.dat") }
        #expect(message.hasPrefix("app.dat: unsupported protobuf wire type \(wireType)"), "\(message)")
        #expect(message.hasSuffix("for field 5 at byte 0"), "\(message)")
    }

    @Test func refusesOverlongVarints() {
        let bytes = Data([0x08] + [UInt8](repeating: 0xFF, count: 10) + [0x01])
        let message = expectInvalid { _ = try InitPacket(bytes: bytes, name: "app.dat") }
        #expect(message == "app.dat: varint too long at byte 1")
    }

    @Test func refusesFieldNumberZero() {
        let message = expectInvalid { _ = try InitPacket(bytes: Data([0x00, 0x01]), name: "app.dat") }
        #expect(message == "app.dat: invalid field number 0 at byte 0")
    }

    @Test func refusesWrongWireTypeForAKnownField() {
        let initCommand = TestProtobuf.field(7, bytes: [1, 2, 3])  // app_size as bytes
        let message = expectInvalid {
            _ = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(initCommand)), name: "app.dat")
        }
        #expect(message == "app.dat: InitCommand.app_size (field 7) at byte 6 has wire type 2, expected varint")
    }

    @Test func refusesOutOfRangeUInt32() {
        let initCommand = TestProtobuf.field(7, varint: 1 << 33)
        let message = expectInvalid {
            _ = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(initCommand)), name: "app.dat")
        }
        #expect(message == "app.dat: InitCommand.app_size value 8589934592 is out of range (at byte 6)")
    }

    @Test func refusesBothCommandAndSignedCommand() {
        let initCommand = TestProtobuf.initCommand(appSize: 1)
        let bytes = TestProtobuf.unsignedPacket(initCommand) + TestProtobuf.signedPacket(initCommand, signature: [])
        let message = expectInvalid { _ = try InitPacket(bytes: Data(bytes), name: "app.dat") }
        #expect(message == "app.dat: holds both command and signed_command; a packet has one or the other")
    }

    @Test func refusesPacketsWithoutCommand() {
        let message = expectInvalid { _ = try InitPacket(bytes: Data(TestProtobuf.field(5, varint: 1)), name: "app.dat") }
        #expect(message == "app.dat: no command or signed_command in the init packet")
        #expect(expectInvalid { _ = try InitPacket(bytes: Data(), name: "app.dat") } == "app.dat: init packet is empty")
    }

    @Test func refusesSignedCommandWithoutSignature() {
        let command = TestProtobuf.field(1, varint: 1)
        let bytes = TestProtobuf.field(2, bytes: TestProtobuf.field(1, bytes: command) + TestProtobuf.field(2, varint: 0))
        let message = expectInvalid { _ = try InitPacket(bytes: Data(bytes), name: "app.dat") }
        #expect(message == "app.dat: signed_command has no signature")
    }

    @Test func refusesOversizeFieldsTheBootloaderCannotDecode() {
        let longHash = TestProtobuf.initCommand(hash: [UInt8](repeating: 1, count: 33))
        #expect(
            expectInvalid { _ = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(longHash)), name: "a.dat") }
                == "a.dat: InitCommand.hash is 33 bytes, more than 32")
        let manySD = TestProtobuf.initCommand(sdReq: Array(1...17))
        #expect(
            expectInvalid { _ = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(manySD)), name: "a.dat") }
                == "a.dat: InitCommand.sd_req has more than 16 entries")
        let longSignature = TestProtobuf.signedPacket(TestProtobuf.initCommand(), signature: [UInt8](repeating: 0, count: 65))
        #expect(
            expectInvalid { _ = try InitPacket(bytes: Data(longSignature), name: "a.dat") }
                == "a.dat: signature is 65 bytes, more than 64")
    }

    @Test func refusesDuplicateInitCommands() {
        let command = TestProtobuf.field(1, varint: 1) + TestProtobuf.field(2, bytes: []) + TestProtobuf.field(2, bytes: [])
        let message = expectInvalid { _ = try InitPacket(bytes: Data(TestProtobuf.field(1, bytes: command)), name: "a.dat") }
        #expect(message == "a.dat: Command.init appears twice (at byte 6)")
    }

    @Test func hashWithoutType() {
        let initCommand = TestProtobuf.field(8, bytes: TestProtobuf.field(2, bytes: [1, 2, 3]))
        let message = expectInvalid {
            _ = try InitPacket(bytes: Data(TestProtobuf.unsignedPacket(initCommand)), name: "a.dat")
        }
        #expect(message == "a.dat: InitCommand.hash has no hash_type")
    }
}
