import Foundation
import OTACore
import Testing

/// MCUmgr: the version the device runs comes from the SMP image list's active slot (sim:zephyr-sensor
/// runs 1.0.0 in slot 0) and feeds the downgrade check.
@Suite struct RunningVersionCommandTests {
    /// imgtool's `unsigned-4KB.bin` (1.2.3.4) with its header's version set to `major.minor.0`
    /// and its SHA-256 TLV computed again, in a temporary file the caller removes.
    static func image(major: UInt8, minor: UInt8) throws -> URL {
        var bytes = [UInt8](try Data(contentsOf: SignatureCommandTests.mcuboot.appendingPathComponent("unsigned-4KB.bin")))
        func word16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        let headerSize = word16(8)
        let imageSize = word16(12) | word16(14) << 16
        try #require(word16(10) == 0, "no protected TLVs")
        bytes.replaceSubrange(20..<28, with: [major, minor, 0, 0, 0, 0, 0, 0])
        let tlvs = headerSize + imageSize
        try #require(word16(tlvs) == 0x6907 && word16(tlvs + 4) == 0x10 && word16(tlvs + 6) == 32, "one SHA-256 TLV")
        bytes.replaceSubrange((tlvs + 8)..<(tlvs + 40), with: SHA256.hash(Data(bytes[0..<tlvs])))
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-\(major).\(minor)-\(UUID().uuidString).bin")
        try Data(bytes).write(to: url)
        return url
    }

    @Test func anOlderImageIsRefusedBeforeAnyUploadWriteAndAllowedWithTheFlag() async throws {
        let older = try Self.image(major: 0, minor: 9)
        defer { try? FileManager.default.removeItem(at: older) }
        let (code, streams) = await runTool(["update", older.path, "--device", "sim:zephyr-sensor"])
        #expect(code == 3, "\(streams.standardError)")
        #expect(streams.standardError.contains("the device runs firmware 1.0.0 (SMP image list, slot 0), newer than the 0.9.0 of "))
        #expect(streams.standardError.contains("pass --allow-downgrade to install an older version"))
        #expect(!streams.standardError.contains("transferring"))
        let (allowed, allowedStreams) = await runTool(["update", older.path, "--device", "sim:zephyr-sensor", "--allow-downgrade"])
        #expect(allowed == 0, "\(allowedStreams.standardError)")
        #expect(allowedStreams.standardError.contains("installing the older version (--allow-downgrade)"))
        #expect(allowedStreams.standardError.contains("image 0.9.0 runs and is confirmed"))
    }

    @Test func theDryRunShowsTheDevicesVersionAgainstThePackages() async throws {
        let older = try Self.image(major: 0, minor: 9)
        defer { try? FileManager.default.removeItem(at: older) }
        let (code, streams) = await runTool(["update", older.path, "--device", "sim:zephyr-sensor", "--dry-run"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput.contains("version: device 1.0.0 (SMP image list, slot 0) → package 0.9.0 ("))
        #expect(streams.standardOutput.contains("a downgrade, refused without --allow-downgrade"))
        let newer = SignatureCommandTests.mcuboot.appendingPathComponent("unsigned-4KB.bin").path
        let (_, newerStreams) = await runTool(["update", newer, "--device", "sim:zephyr-sensor", "--dry-run"])
        #expect(newerStreams.standardOutput.contains("version: device 1.0.0 (SMP image list, slot 0) → package 1.2.3.4 (unsigned-4KB.bin)\n"))
        // A device that reports through Device Information only (generic on the ESP32-S3 profile).
        let image = try temporaryImage(size: 500)
        defer { try? FileManager.default.removeItem(at: image) }
        let package = try temporaryPackage(size: 2000) { size, sha in
            #"{"package": 1, "protocol": "generic", "version": "2.1.0", "images": [{"file": "app.bin", "size": \#(size), "sha256": "\#(sha)"}]}"#
        }
        defer { try? FileManager.default.removeItem(at: package) }
        let (_, generic) = await runTool(["update", package.path, "--device", "sim:esp32s3-mtu244-2m", "--dry-run"])
        #expect(generic.standardOutput.contains("version: device 2.0.1 (Device Information) → package 2.1.0 (the package manifest)"))
    }
}
