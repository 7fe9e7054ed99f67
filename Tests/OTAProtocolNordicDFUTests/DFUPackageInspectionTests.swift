import Foundation
import OTACore
import OTAProtocolNordicDFU
import Testing

@Suite struct DFUPackageInspectionTests {
    @Test func reportOfAConsistentPackage() throws {
        let inspection = try DFUPackage.inspect(contentsOf: Fixture.url("sd-bl-app", "zip"))
        #expect(inspection.isConsistent)
        #expect(inspection.problems.isEmpty)
        let report = inspection.report
        let lines = report.split(separator: "\n").map(String.init)
        #expect(lines.first == "sd-bl-app.zip: Nordic DFU package, 2 parts, consistent")
        #expect(lines.contains("  part 1 of 2: softdevice_bootloader"))
        #expect(lines.contains("  part 2 of 2: application"))
        #expect(lines.contains("    image:           sd_bl.bin, 6144 bytes, CRC-32 \(hex32(inspection.parts[0].image.crc32))"))
        #expect(lines.contains("    type:            SOFTDEVICE_BOOTLOADER"))
        #expect(lines.contains("    sd_req:          0x0101, 0x00B7"))
        #expect(lines.contains("    sizes:           sd_size 4096 + bl_size 2048 = 6144 bytes (matches sd_bl.bin)"))
        #expect(lines.contains("    hash:            SHA256 \(Fixture.sdBLInitPacketHash) (byte-reversed SHA-256 of sd_bl.bin: matches)"))
        #expect(lines.contains("    boot validation: VALIDATE_GENERATED_CRC, VALIDATE_GENERATED_CRC"))
        #expect(lines.contains("    sizes:           app_size 3072 bytes (matches app.bin)"))
        #expect(lines.contains("    fw_version:      6"))
        #expect(lines.contains("    hw_version:      52"))
        #expect(lines.contains("    is_debug:        false"))
        #expect(report.contains("signed (ECDSA_P256_SHA256, 64-byte signature)"))
        #expect(inspection.description == report)
        #expect(inspection.firmwareInspection == FirmwareInspection(report: report, problems: []))
    }

    @Test func reportOfAnInconsistentPackage() throws {
        let zip = try Fixture.modifiedAppZip { files in
            files["app.bin"]?.removeLast(4)
            files["notes.txt"] = Data("hello".utf8)
        }
        let inspection = try DFUPackage.inspect(zipData: zip, name: "app.zip")
        #expect(!inspection.isConsistent)
        #expect(inspection.problems.count == 2)
        #expect(inspection.problems[0] == "app.zip: app.dat: app_size is 3072 but app.bin has 3068 bytes")
        #expect(inspection.problems[1].hasPrefix("app.zip: app.dat: hash does not match app.bin"))
        #expect(inspection.warnings == ["app.zip: notes.txt is not referenced by manifest.json and will not be sent"])
        let report = inspection.report
        #expect(report.hasPrefix("app.zip: Nordic DFU package, 1 part, NOT consistent (2 problems)\n"))
        #expect(report.contains("    sizes:           app_size 3072 bytes (MISMATCH: app.bin has 3068)"))
        #expect(report.contains("(MISMATCH)\n"))
        #expect(report.contains("  problems:\n    - app.zip: app.dat: app_size is 3072 but app.bin has 3068 bytes"))
        #expect(report.contains("  warnings:\n    - app.zip: notes.txt is not referenced"))
        #expect(inspection.firmwareInspection.problems == inspection.problems)
    }

    @Test func unsignedBootloaderIsWorthAWarning() throws {
        let files = try Fixture.files(of: "bootloader")
        let bin = try #require(files["bl.bin"])
        let initCommand = TestProtobuf.initCommand(
            type: 2, blSize: UInt64(bin.count), hash: SHA256.hash(bin).reversed(), isDebug: true
        )
        let inspection = try DFUPackage.inspect(
            binary: bin, binaryName: "bl.bin", initPacket: Data(TestProtobuf.unsignedPacket(initCommand)),
            initPacketName: "bl.dat"
        )
        #expect(inspection.isConsistent)
        #expect(inspection.warnings.contains("bl.dat: not signed; Secure DFU bootloaders require a signature for BOOTLOADER updates"))
        #expect(inspection.warnings.contains("bl.dat: is_debug is set; only a debug bootloader accepts it"))
        #expect(inspection.report.hasPrefix("bl.bin + bl.dat: Nordic DFU image and init packet, 1 part, consistent"))
    }

    @Test func largeInitPacketIsWorthAWarning() throws {
        let bin = Data([1, 2, 3, 4])
        var initCommand = TestProtobuf.initCommand(appSize: 4, hash: SHA256.hash(bin).reversed())
        initCommand += TestProtobuf.field(200, bytes: [UInt8](repeating: 0, count: 600))
        let inspection = try DFUPackage.inspect(
            binary: bin, binaryName: "a.bin", initPacket: Data(TestProtobuf.unsignedPacket(initCommand)), initPacketName: "a.dat"
        )
        #expect(inspection.isConsistent)
        #expect(inspection.warnings.contains { $0.hasPrefix("a.dat: init packet is ") && $0.hasSuffix("SDK 15.3 bootloaders accept at most 512") })
    }

    @Test func inspectionStillThrowsForUnreadablePackages() {
        let message = expectInvalid { _ = try DFUPackage.inspect(zipData: Data("PK".utf8), name: "x.zip") }
        #expect(message == "x.zip: not a zip archive (2 bytes is too short)")
    }
}

/// "0x1234ABCD", as the report prints CRCs.
private func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
