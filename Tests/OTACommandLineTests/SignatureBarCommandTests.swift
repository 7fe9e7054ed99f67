import Foundation
import Testing

/// Issue 16's bar on the command line: a real nrfutil package and real imgtool images (ECDSA and
/// Ed25519), signed with key A, are refused before connecting when key B is trusted or a byte of
/// their signature is flipped, and update when key A is trusted. And with `--sim-key`, the
/// simulated device itself refuses them when the host does not check (no `--key`).
@Suite struct SignatureBarCommandTests {
    static let nordic = SignatureCommandTests.nordic
    static let mcuboot = SignatureCommandTests.mcuboot

    /// An imgtool image, the key that signed it (A) and one that did not (B).
    static let imgtool: [(image: String, keyA: String, keyB: String)] = [
        ("ecdsa-p256-4KB.bin", "test-ecdsa-p256.pub.pem", "other-ecdsa-p256.pub.pem"),
        ("ed25519-4KB.bin", "test-ed25519.pub.pem", "other-ed25519.pub.pem"),
    ]

    static func mcuboot(_ name: String) -> String { mcuboot.appendingPathComponent(name).path }

    /// A copy of an imgtool image with the last byte of its signature (the last TLV, so the
    /// file's last byte) flipped, removed by the caller.
    static func flippedImage(_ name: String) throws -> URL {
        var bytes = try Data(contentsOf: mcuboot.appendingPathComponent(name))
        bytes[bytes.endIndex - 1] ^= 0x01
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-flipped-\(UUID().uuidString)-\(name)")
        try bytes.write(to: url)
        return url
    }

    /// `app-boot-ecdsa.zip`'s image and init packet as a `.bin` and `.dat` pair in a folder of
    /// their own, the init packet's signature (its last 64 bytes) with a byte flipped when
    /// `flipping`; the caller removes the folder.
    static func signedPair(flipping: Bool) throws -> (folder: URL, bin: URL) {
        let entries = try storedZipEntries(Data(contentsOf: URL(fileURLWithPath: SignatureCommandTests.package)))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ota-pair-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var initPacket = try #require(entries["app.dat"])
        if flipping { initPacket[initPacket.endIndex - 5] ^= 0x01 }
        try initPacket.write(to: folder.appendingPathComponent("app.dat"))
        let bin = folder.appendingPathComponent("app.bin")
        try #require(entries["app.bin"]).write(to: bin)
        return (folder, bin)
    }

    /// The entries of a zip whose entries are stored (nrfutil stores them uncompressed).
    static func storedZipEntries(_ zip: Data) throws -> [String: Data] {
        let bytes = [UInt8](zip)
        func word16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func word32(_ at: Int) -> Int { word16(at) | word16(at + 2) << 16 }
        var entries: [String: Data] = [:]
        var offset = 0
        while offset + 30 <= bytes.count, word32(offset) == 0x0403_4B50 {
            try #require(word16(offset + 8) == 0, "entry at \(offset) is compressed")
            let size = word32(offset + 18)
            let nameLength = word16(offset + 26)
            let extraLength = word16(offset + 28)
            let name = String(decoding: bytes[(offset + 30)..<(offset + 30 + nameLength)], as: UTF8.self)
            let start = offset + 30 + nameLength + extraLength
            entries[name] = Data(bytes[start..<(start + size)])
            offset = start + size
        }
        return entries
    }

    // MARK: - Checked on the host, before connecting

    @Test func aFlippedSignatureByteOfTheNrfutilPackageIsRefusedBeforeConnecting() async throws {
        let (folder, bin) = try Self.signedPair(flipping: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (code, streams) = await runTool(["update", bin.path, "--device", "sim:nrf-tracker", "--key", SignatureCommandTests.keyA])
        #expect(code == 3)
        #expect(streams.standardError.hasPrefix("ota: error: app.dat's signature does not verify with test-key.pub.pem (ECDSA P-256, "))
        #expect(streams.standardError.split(separator: "\n").count == 1)
        #expect(!streams.standardError.contains("connecting"))
        // The same pair unflipped goes through: the flip, not the pair, was refused.
        let (good, goodFolder) = try { () throws -> (URL, URL) in
            let pair = try Self.signedPair(flipping: false)
            return (pair.bin, pair.folder)
        }()
        defer { try? FileManager.default.removeItem(at: goodFolder) }
        let (accepted, acceptance) = await runTool(["update", good.path, "--device", "sim:nrf-tracker", "--key", SignatureCommandTests.keyA])
        #expect(accepted == 0, "\(acceptance.standardError)")
    }

    @Test(arguments: imgtool)
    func anImgtoolImageWithKeyBTrustedIsRefusedBeforeConnecting(fixture: (image: String, keyA: String, keyB: String)) async {
        let (code, streams) = await runTool(["update", Self.mcuboot(fixture.image), "--device", "sim:zephyr-sensor", "--key", Self.mcuboot(fixture.keyB)])
        #expect(code == 3)
        #expect(streams.standardError.hasPrefix("ota: error: \(fixture.image)'s "))
        #expect(streams.standardError.contains("does not verify with \(fixture.keyB)"))
        #expect(streams.standardError.contains("which is none of them"))
        #expect(streams.standardError.split(separator: "\n").count == 1)
        #expect(!streams.standardError.contains("connecting"))
    }

    @Test(arguments: imgtool)
    func anImgtoolImageWithKeyATrustedUpdates(fixture: (image: String, keyA: String, keyB: String)) async {
        let (code, streams) = await runTool(["update", Self.mcuboot(fixture.image), "--device", "sim:zephyr-sensor", "--key", Self.mcuboot(fixture.keyA)])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardError.hasPrefix("signature: \(fixture.image): signature verified with \(fixture.keyA)"))
    }

    @Test(arguments: imgtool)
    func anImgtoolImageWithAFlippedSignatureByteIsRefusedBeforeConnecting(fixture: (image: String, keyA: String, keyB: String)) async throws {
        let flipped = try Self.flippedImage(fixture.image)
        defer { try? FileManager.default.removeItem(at: flipped) }
        let (code, streams) = await runTool(["update", flipped.path, "--device", "sim:zephyr-sensor", "--key", Self.mcuboot(fixture.keyA)])
        #expect(code == 3)
        #expect(streams.standardError.contains("does not verify with \(fixture.keyA)"))
        #expect(streams.standardError.contains("the image was changed after signing"))
        #expect(!streams.standardError.contains("connecting"))
    }

    // MARK: - Checked by the simulated device (--sim-key), the host checking nothing

    @Test func theSimulatedBootloaderRefusesAPackageSignedWithAnotherKey() async {
        let (code, streams) = await runTool(["update", SignatureCommandTests.package, "--device", "sim:nrf-tracker", "--sim-key", SignatureCommandTests.keyB])
        #expect(code == 1)
        // Refused by the device, after connecting: the init packet's Execute fails.
        #expect(streams.standardError.contains("connecting"))
        #expect(streams.standardError.contains("ota: error: bootloader rejected the init packet: Execute failed: 0x05 (invalid object"))
        let (accepted, acceptance) = await runTool([
            "update", SignatureCommandTests.package, "--device", "sim:nrf-tracker", "--sim-key", SignatureCommandTests.keyA,
        ])
        #expect(accepted == 0, "\(acceptance.standardError)")
    }

    @Test func theSimulatedBootloaderRefusesAFlippedSignatureByte() async throws {
        let (folder, bin) = try Self.signedPair(flipping: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (code, streams) = await runTool(["update", bin.path, "--device", "sim:nrf-tracker", "--sim-key", SignatureCommandTests.keyA])
        #expect(code == 1)
        #expect(streams.standardError.contains("Execute failed: 0x05 (invalid object"))
    }

    @Test func theSimulatedBootloaderRefusesAnUnsignedPackage() async {
        let unsigned = Self.nordic.appendingPathComponent("app-unsigned.zip").path
        let (code, streams) = await runTool(["update", unsigned, "--device", "sim:nrf-tracker", "--sim-key", SignatureCommandTests.keyA])
        #expect(code == 1)
        #expect(streams.standardError.contains("signature"), "\(streams.standardError)")
    }

    @Test(arguments: imgtool)
    func theSimulatedMCUbootRefusesAnImageSignedWithAnotherKey(fixture: (image: String, keyA: String, keyB: String)) async throws {
        let (code, streams) = await runTool(["update", Self.mcuboot(fixture.image), "--device", "sim:zephyr-sensor", "--sim-key", Self.mcuboot(fixture.keyB)])
        #expect(code == 1)
        #expect(streams.standardError.contains("did not keep image 1.2.3 after the reset"))
        let flipped = try Self.flippedImage(fixture.image)
        defer { try? FileManager.default.removeItem(at: flipped) }
        let (refused, refusal) = await runTool(["update", flipped.path, "--device", "sim:zephyr-sensor", "--sim-key", Self.mcuboot(fixture.keyA)])
        #expect(refused == 1)
        #expect(refusal.standardError.contains("did not keep image 1.2.3 after the reset"))
        let (accepted, acceptance) = await runTool([
            "update", Self.mcuboot(fixture.image), "--device", "sim:zephyr-sensor", "--sim-key", Self.mcuboot(fixture.keyA),
        ])
        #expect(accepted == 0, "\(acceptance.standardError)")
    }

    @Test func aSimKeyTheDeviceCannotUseIsOneLine() async throws {
        let (code, streams) = await runTool([
            "update", SignatureCommandTests.package, "--device", "sim:nrf-tracker", "--sim-key", Self.mcuboot("test-ed25519.pub.pem"),
        ])
        #expect(code == 2)
        #expect(streams.standardError.contains("a Secure DFU bootloader verifies ECDSA P-256 signatures only"))
        #expect(streams.standardError.split(separator: "\n").count == 1)
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (generic, genericStreams) = await runTool(["update", image.path, "--protocol", "generic", "--sim-key", SignatureCommandTests.keyA])
        #expect(generic == 2)
        #expect(genericStreams.standardError.contains("a simulated generic device checks no signatures"))
        let (missing, missingStreams) = await runTool(["update", image.path, "--protocol", "generic", "--sim-key", "/nonexistent.pem"])
        #expect(missing == 2)
        #expect(missingStreams.standardError.contains("--sim-key: key "))
    }
}
