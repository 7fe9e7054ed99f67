import Foundation
import OTACore
import Testing

/// Issue 14: hostile package manifests and catalogs get one line naming the file and field, and
/// never crash or take time or memory out of proportion to their size.
@Suite struct HostileManifestTests {
    private static let registry = ProtocolRegistry([
        ProtocolDescriptor(
            name: "alpha", summary: "alpha", parameters: [],
            makeClient: { (_) throws(OTAError) in StubProtocol() },
            makeDeviceModel: { (_) throws(OTAError) in StubDevice() }
        )
    ])

    private struct StubProtocol: UpdateProtocol {
        var requirements: [CharacteristicRequirement] { [] }
        func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome { .accepted }
    }

    private final class StubDevice: DeviceModel {
        var services: [GATTServiceDefinition] { [] }
        func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus { .success }
    }

    private func parse(_ json: String) throws(OTAError) -> DeviceCatalog {
        try DeviceCatalog.parse(Data(json.utf8), source: "c.json", registry: Self.registry)
    }

    private func catalogError(_ json: String) throws -> String {
        let error = try #require(throws: OTAError.self) { try parse(json) }
        #expect(error.code == .invalidManifest)
        #expect(!error.message.contains("\n"))
        return error.message
    }

    private func family(_ extra: String) -> String {
        #"{"catalog": 1, "families": [{"name": "f", "match": {"name": "X*"}, "protocol": "alpha"\#(extra)}]}"#
    }

    private static let image = Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 29) })

    /// A package directory with `manifest.json` and, unless `writeImage` is false, `app.bin`.
    private func makePackage(sha: String? = nil, writeImage: Bool = true) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if writeImage { try Self.image.write(to: directory.appendingPathComponent("app.bin")) }
        let digest = sha ?? Hex.bytes(SHA256.hash(Self.image))
        try Data(#"{"package": 1, "images": [{"file": "app.bin", "size": \#(Self.image.count), "sha256": "\#(digest)"}]}"#.utf8)
            .write(to: directory.appendingPathComponent("manifest.json"))
        return directory
    }

    // Row 1: fullwidth digits pass Character.isHexDigit but not UInt8(_:radix:).

    @Test func fullwidthDigitsInAPackageSHA256AreOneLine() throws {
        let directory = try makePackage(sha: String(repeating: "\u{FF10}", count: 64))
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = try #require(throws: OTAError.self) { try FirmwarePackage.open(directory) }
        #expect(error.message.hasPrefix(directory.path + "/manifest.json: images[0].sha256: "), "got: \(error.message)")
        #expect(error.message.hasSuffix("is not hexadecimal bytes"))
    }

    @Test(arguments: ["\u{FF21}\u{FF22}", "\u{FF10}\u{FF11}", "٠١", "+1", "-1", "1 "])
    func nonASCIIHexInAManufacturerPrefixIsOneLine(prefix: String) throws {
        let message = try catalogError(
            #"{"catalog": 1, "families": [{"name": "f", "match": {"manufacturer": {"company": "0x0059", "prefix": "\#(prefix)"}}, "protocol": "alpha"}]}"#
        )
        #expect(message == "c.json: families[0].match.manufacturer.prefix: '\(prefix)' is not hexadecimal bytes")
    }

    @Test(arguments: ["\u{FF10}x0059", "\u{FF10}\u{FF10}59", "+059", "-0x1"])
    func nonASCIICompanyIsOneLine(company: String) throws {
        let message = try catalogError(
            #"{"catalog": 1, "families": [{"name": "f", "match": {"manufacturer": {"company": "\#(company)"}}, "protocol": "alpha"}]}"#
        )
        #expect(message == #"c.json: families[0].match.manufacturer.company: expected a 16-bit company identifier such as "0x0059""#)
    }

    // Row 2: seconds beyond what a Duration in milliseconds holds.

    @Test(arguments: [
        (#", "timeouts": {"connect": 1e16}"#, "timeouts.connect"),
        (#", "timeouts": {"stall": 1e300}"#, "timeouts.stall"),
        (#", "resume": {"maxDelay": 9.3e15}"#, "resume.maxDelay"),
        (#", "resume": {"initialDelay": -1}"#, "resume.initialDelay"),
        (#", "timeouts": {"response": 0}"#, "timeouts.response"),
    ])
    func hugeOrNonPositiveSecondsAreOneLine(extra: String, field: String) throws {
        let message = try catalogError(family(extra))
        #expect(message == "c.json: families[0].\(field): expected a positive number of seconds, at most 31536000 (a year)")
    }

    @Test func aYearOfSecondsIsAccepted() throws {
        let catalog = try parse(family(#", "timeouts": {"verify": 31536000}"#))
        #expect(catalog.families[0].configuration?.verifyTimeout == .seconds(31_536_000))
    }

    // Row 5: a big catalog parses in time proportional to its size, and there is a cap.

    @Test func aCatalogOfManyFamiliesParsesInLinearTime() throws {
        func catalog(_ count: Int) -> String {
            let families = (0..<count).map { #"{"name": "f\#($0)", "match": {"name": "D\#($0)-*"}, "protocol": "alpha"}"# }
            return #"{"catalog": 1, "families": ["# + families.joined(separator: ",") + "]}"
        }
        let small = catalog(1_000)
        let large = catalog(10_000)
        let clock = ContinuousClock()
        // The fastest of three runs each: a loaded machine slows single runs, not all three.
        let smallTime = try (0..<3).map { _ in try clock.measure { _ = try parse(small) } }.min()!
        var count = 0
        let largeTime = try (0..<3).map { _ in try clock.measure { count = try parse(large).families.count } }.min()!
        #expect(count == 10_000)
        // Ten times the families: linear is ~10x, quadratic ~100x.
        #expect(largeTime < smallTime * 40 + .milliseconds(300), "1,000 families: \(smallTime), 10,000: \(largeTime)")
    }

    @Test func aCatalogAboveTheFamilyCapIsOneLine() throws {
        let families = (0...DeviceCatalog.maximumFamilies).map { #"{"name": "f\#($0)", "match": {"name": "D\#($0)"}, "protocol": "alpha"}"# }
        let message = try catalogError(#"{"catalog": 1, "families": ["# + families.joined(separator: ",") + "]}")
        #expect(message == "c.json: families: \(DeviceCatalog.maximumFamilies + 1) families, more than the \(DeviceCatalog.maximumFamilies) a catalog may hold")
    }

    @Test func aCatalogFileAboveTheSizeCapIsRefusedUnread() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-big-catalog-\(UUID().uuidString).json")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(DeviceCatalog.maximumFileSize + 1))
        try handle.close()
        let error = try #require(throws: OTAError.self) { try DeviceCatalog.load(url, registry: Self.registry) }
        #expect(error.message == "\(url.path): \(DeviceCatalog.maximumFileSize + 1) bytes, more than the \(DeviceCatalog.maximumFileSize) a catalog may have")
    }

    // Row 4: images are regular files inside the package; the bytes verified are the bytes kept.

    @Test func anImageThatIsASymlinkOutsideThePackageIsRefused() throws {
        let directory = try makePackage(writeImage: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("app.bin").path, withDestinationPath: "/etc/passwd")
        let error = try #require(throws: OTAError.self) { try FirmwarePackage.open(directory) }
        #expect(
            error.message == "\(directory.path)/manifest.json: images[0].file: 'app.bin' is a symbolic link; images must be regular files inside the package")
    }

    @Test func anImageInASymlinkedDirectoryIsRefused() throws {
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent("ota-outside-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: outside) }
        try Self.image.write(to: outside.appendingPathComponent("app.bin"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("sub").path, withDestinationPath: outside.path)
        let digest = Hex.bytes(SHA256.hash(Self.image))
        try Data(#"{"package": 1, "images": [{"file": "sub/app.bin", "size": \#(Self.image.count), "sha256": "\#(digest)"}]}"#.utf8)
            .write(to: directory.appendingPathComponent("manifest.json"))
        let error = try #require(throws: OTAError.self) { try FirmwarePackage.open(directory) }
        #expect(
            error.message
                == "\(directory.path)/manifest.json: images[0].file: 'sub/app.bin' is a symbolic link; images must be regular files inside the package")
    }

    @Test func anImageThatIsAFIFOIsRefused() throws {
        let directory = try makePackage(writeImage: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(mkfifo(directory.appendingPathComponent("app.bin").path, 0o600) == 0)
        let error = try #require(throws: OTAError.self) { try FirmwarePackage.open(directory) }
        #expect(
            error.message == "\(directory.path)/manifest.json: images[0].file: 'app.bin' is not a regular file; images must be regular files inside the package"
        )
    }

    @Test func aManifestOrCatalogThatIsAFIFOIsRefusedWithoutBlocking() throws {
        let directory = try makePackage()
        defer { try? FileManager.default.removeItem(at: directory) }
        let manifest = directory.appendingPathComponent("manifest.json")
        try FileManager.default.removeItem(at: manifest)
        #expect(mkfifo(manifest.path, 0o600) == 0)
        let error = try #require(throws: OTAError.self) { try FirmwarePackage.open(directory) }
        #expect(error.message == "\(manifest.path): is a FIFO, not a regular file")
        let catalog = try #require(throws: OTAError.self) { try DeviceCatalog.load(manifest, registry: Self.registry) }
        #expect(catalog.message == "\(manifest.path): is a FIFO, not a regular file")
    }

    @Test func aHugePackageManifestIsRefusedUnread() throws {
        let directory = try makePackage()
        defer { try? FileManager.default.removeItem(at: directory) }
        let handle = try FileHandle(forWritingTo: directory.appendingPathComponent("manifest.json"))
        try handle.truncate(atOffset: UInt64(FirmwarePackage.maximumManifestSize + 1))
        try handle.close()
        let error = try #require(throws: OTAError.self) { try FirmwarePackage.open(directory) }
        #expect(error.message == "\(directory.path)/manifest.json: 1048577 bytes, more than the 1048576 a package manifest may have")
    }

    @Test func theVerifiedBytesAreKeptSoAReplacedFileIsNotSent() throws {
        let directory = try makePackage()
        defer { try? FileManager.default.removeItem(at: directory) }
        let package = try FirmwarePackage.open(directory)
        try Data(repeating: 0xEE, count: Self.image.count).write(to: directory.appendingPathComponent("app.bin"))
        #expect(try package.singleImage().bytes == Self.image)
    }
}

/// Issue 14 row 3: an image file truncated after loading must not take the process down.
@Suite struct TruncatedImageTests {
    @Test func anImageTruncatedAfterOpeningFailsItsReadsInOneLine() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-truncate-\(UUID().uuidString).bin")
        let original = Data((0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try original.write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let image = try FirmwareImage(contentsOf: url)
        #expect(image.crc32 == CRC32.checksum(original))
        #expect(truncate(url.path, 0) == 0)
        // Mapped, reading the bytes now would raise SIGBUS and end the test process; read through
        // the window, the read fails with the one line and hands out no other bytes.
        let error = #expect(throws: OTAError.self) { try image[0..<100] }
        #expect(error?.code == .invalidImage)
        #expect(error?.message.contains("changed while it was being sent (block at offset 0)") == true)
    }

    @Test func aDeviceFileIsRefusedInsteadOfReadForever() throws {
        let error = try #require(throws: OTAError.self) { try FirmwareImage(contentsOf: URL(fileURLWithPath: "/dev/zero")) }
        #expect(error.message == "/dev/zero: is a device, not a regular file")
    }

    @Test func aVeryLongPathIsShortInTheMessage() throws {
        let path = "/" + String(repeating: "a", count: 1_000_000)
        let error = try #require(throws: OTAError.self) { try FirmwareImage(contentsOf: URL(fileURLWithPath: path)) }
        #expect(error.message == "/" + String(repeating: "a", count: 79) + "… (1000001 characters): no such file")
    }
}
