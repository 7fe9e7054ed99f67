import Foundation
import OTACore
import OTATestSupport
import Testing

@testable import OTAProtocolEspressif

/// App images built here by ``EspressifAppImage/wrap(_:chipID:loadAddress:entryPoint:)``,
/// following esptool's layout (see the fixture test for one made by esptool itself).
@Suite struct EspressifImageTests {
    static func app(_ size: Int = 5000) throws -> Data { EspressifAppImage.wrap(try UpdateHarness.image(size: size).bytes) }

    @Test func theHeaderSegmentsChecksumAndHashAreRead() throws {
        let bytes = try Self.app(5000)
        #expect(bytes.count % 16 == 0 && (bytes.count - 32) % 16 == 0)
        let image = try EspressifAppImage(parsing: bytes, name: "app.bin")
        #expect(image.segmentCount == 1 && image.segments == [.init(loadAddress: 0x3C00_0020, offset: 32, length: 5000)])
        #expect(image.spiMode == 2 && image.spiSize == 2 && image.spiFrequency == 0)
        #expect(image.entryPoint == 0x4037_5A1C && image.chipName == "ESP32-S3" && image.hashAppended)
        #expect(image.checksum == image.computedChecksum)
        #expect(image.appendedSHA256 == SHA256.hash(bytes.prefix(bytes.count - 32)))
        #expect(image.problems.isEmpty && image.trailingBytes == 0)
        let report = image.report(name: "app.bin", size: bytes.count)
        #expect(report.contains("header: magic 0xE9, 1 segment, SPI DIO 4MB 40m, entry 0x40375A1C"))
        #expect(report.contains("SHA-256 appended: \(Hex.bytes(image.appendedSHA256!)) (matches)"))
    }

    @Test func theAppDescriptionIsShownWhenTheFirstSegmentStartsWithIt() throws {
        var descriptor = [UInt8](repeating: 0, count: 256)
        descriptor[0..<4] = [0x32, 0x54, 0xCD, 0xAB]
        for (offset, text) in [(16, "1.2.3"), (48, "lamp"), (112, "v5.3")] {
            descriptor.replaceSubrange(offset..<(offset + text.utf8.count), with: Array(text.utf8))
        }
        let bytes = EspressifAppImage.wrap(Data(descriptor))
        let image = try EspressifAppImage(parsing: bytes, name: "lamp.bin")
        #expect(image.appDescription?.version == "1.2.3" && image.appDescription?.project == "lamp")
        #expect(image.report(name: "lamp.bin", size: bytes.count).contains("  app: lamp 1.2.3 (ESP-IDF v5.3)"))
        #expect(try EspressifAppImage(parsing: try Self.app(), name: "a").appDescription == nil)
    }

    /// The segment checksum, folded eight bytes a step, against the byte loop: every length
    /// 0–70 (the word loop and its tail), slices that start inside a buffer, any seed.
    @Test func theChecksumFoldedByWordsEqualsTheByteLoop() {
        let bytes = Data((0..<80).map { UInt8(truncatingIfNeeded: $0 &* 73 &+ 11) })
        for length in 0...70 {
            for start in [0, 1, 5, 9] {
                let piece = bytes[start..<(start + length)]
                let seed = UInt8(truncatingIfNeeded: length &* 29)
                var expected = seed
                for byte in piece { expected ^= byte }
                #expect(EspressifAppImage.xorChecksum(piece, from: seed) == expected, "length \(length) at \(start)")
            }
        }
    }

    @Test func theWrongMagicIsRefusedInOneLine() throws {
        var bytes = try Self.app()
        bytes[0] = 0xE8
        let client = EspressifClient()
        let error = try #require(throws: OTAError.self) { try client.check(try FirmwareImage(bytes: bytes, name: "app.bin")) }
        #expect(error.code == .invalidImage)
        #expect(error.message == "app.bin is not an ESP-IDF app image: magic 0xE8, expected 0xE9")
    }

    @Test func aSHA256MismatchIsRefusedInOneLine() throws {
        var bytes = try Self.app()
        bytes[bytes.count - 1] ^= 1
        let error = try #require(throws: OTAError.self) { try EspressifClient().check(try FirmwareImage(bytes: bytes, name: "app.bin")) }
        #expect(error.code == .invalidImage)
        #expect(error.message.hasPrefix("app.bin: appended SHA-256 "))
        #expect(error.message.hasSuffix("; refusing to send it"))
        #expect(!error.message.contains("\n"))
    }

    @Test func aDamagedSegmentFailsTheChecksumAndTheHash() throws {
        var bytes = try Self.app()
        bytes[100] ^= 0xFF
        let image = try EspressifAppImage(parsing: bytes, name: "app.bin")
        #expect(image.problems.count == 2)
    }

    @Test func truncatedImagesAreNamed() throws {
        let bytes = try Self.app()
        #expect(throws: OTAError.self) { try EspressifAppImage(parsing: bytes.prefix(1000), name: "a") }
        #expect(throws: OTAError.self) { try EspressifAppImage(parsing: bytes.prefix(bytes.count - 10), name: "a") }
        #expect(throws: OTAError.self) { try EspressifAppImage(parsing: bytes.prefix(10), name: "a") }
    }

    @Test func theCheckCanBeTurnedOffForPreEncryptedImages() throws {
        let client = EspressifClient(configuration: .init(imageCheck: .none))
        try client.check(try UpdateHarness.image(size: 1000))
        let configuration = try EspressifConfiguration(parameters: ["image": "none", "variant": "nimble"])
        #expect(configuration.imageCheck == .none && configuration.variant == .nimble)
        #expect(throws: OTAError.self) { try EspressifConfiguration(parameters: ["variant": "esp-idf"]) }
    }

    @Test func inspectReadsAFileAndLeavesOthersAlone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("esp-inspect-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = directory.appendingPathComponent("app.bin")
        try Self.app().write(to: good)
        let format = EspressifAppImageFormat()
        let inspection = try #require(try format.inspect(good))
        #expect(inspection.problems.isEmpty)
        #expect(inspection.report.hasPrefix("ESP-IDF app image app.bin: "))
        #expect(try format.load(good) == nil, "an app image is sent as it is")
        let other = directory.appendingPathComponent("other.bin")
        try Data([0x1E, 0x51, 0x80, 0xF3] + [UInt8](repeating: 0, count: 40)).write(to: other)
        #expect(try format.inspect(other) == nil)
    }

    static func fixture(_ name: String) throws -> URL {
        try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
    }

    /// An image made by the real esptool: read as `esptool image-info` reads it.
    @Test func anEsptoolImageIsReadAsEsptoolReadsIt() throws {
        let image = try FirmwareImage(contentsOf: try Self.fixture("app-c3.bin"))
        let app = try EspressifAppImage(parsing: image.bytes, name: image.name)
        #expect(image.count == 68_608)
        #expect(app.chipName == "ESP32-C3" && app.entryPoint == 0x4200_0020 && app.spiMode == 2 && app.spiSize == 2)
        #expect(app.segments.map(\.length) == [0x3E8, 0xFC08, 0xBB8])
        #expect(app.segments.map(\.loadAddress) == [0x3C00_0020, 0, 0x4200_0020])
        #expect(app.segments.map { $0.offset - 8 } == [0x18, 0x408, 0x1_0018])
        #expect(app.hashAppended && app.problems.isEmpty && app.trailingBytes == 0)
        #expect(app.maximumRevision == 65535)
        try EspressifClient().check(image)

        let plain = try FirmwareImage(contentsOf: try Self.fixture("app-c3-nohash.bin"))
        let noHash = try EspressifAppImage(parsing: plain.bytes, name: plain.name)
        #expect(!noHash.hashAppended && noHash.appendedSHA256 == nil && noHash.problems.isEmpty)
        #expect(plain.count == image.count - 32)
        #expect(
            plain.bytes
                == image.bytes.prefix(plain.count).enumerated().reduce(into: Data()) { data, pair in
                    data.append(pair.offset == 23 ? 0 : pair.element)
                }, "the same image with the hash flag clear and no digest")
    }

    /// The esptool image goes through the whole update byte-identical.
    @Test func anEsptoolImageUpdatesByteIdentical() async throws {
        let image = try FirmwareImage(contentsOf: try Self.fixture("app-c3.bin"))
        let harness = EspressifHarness(profile: .esp32MTU185, variant: .nimble)
        _ = try await harness.update(image, variant: .nimble, check: .espApp).result.get()
        #expect(harness.base.flashContents(image.count) == image.bytes)
    }

    @Test func rawImagePreparationWrapsBareBytesOnce() throws {
        let raw = try UpdateHarness.image(size: 3000)
        let prepared = try EspressifAppImageFormat().prepare(raw)
        try EspressifClient().check(prepared)
        #expect(try EspressifAppImageFormat().prepare(prepared).bytes == prepared.bytes)
    }
}
