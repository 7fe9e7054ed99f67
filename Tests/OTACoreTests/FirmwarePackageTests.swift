import Foundation
import OTACore
import Testing

@Suite struct FirmwarePackageTests {
    private static let image = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 13) })

    /// A package directory with `manifest` (placeholders SIZE and SHA filled in) and app.bin.
    private func makePackage(_ manifest: String, image: Data = Self.image) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-package-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try image.write(to: directory.appendingPathComponent("app.bin"))
        let filled = manifest.replacingOccurrences(of: "SIZE", with: "\(Self.image.count)")
            .replacingOccurrences(of: "SHA", with: Hex.bytes(SHA256.hash(Self.image)))
        try Data(filled.utf8).write(to: directory.appendingPathComponent("manifest.json"))
        return directory
    }

    private static let valid = """
        {"package": 1, "name": "sensor-app", "version": "2.4.1", "protocol": "alpha", "families": ["sensor"], "hardware": ["rev-b"],
         "images": [{"file": "app.bin", "size": SIZE, "sha256": "SHA"}]}
        """

    private func family(_ name: String, hardware: String?) -> DeviceFamily {
        DeviceFamily(name: name, match: .init(namePattern: GlobPattern("*")), protocolName: "alpha", hardware: hardware, source: "c.json")
    }

    @Test func opensAndVerifiesAPackage() throws {
        let directory = try makePackage(Self.valid)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(FirmwarePackage.isPackage(directory))
        let package = try FirmwarePackage.open(directory)
        #expect(package.name == "sensor-app" && package.version == "2.4.1" && package.protocolName == "alpha")
        #expect(package.images.map(\.file) == ["app.bin"])
        #expect(try FirmwareImage(contentsOf: package.singleImageURL()).allBytes() == Self.image)
        try package.checkCompatibility(with: family("sensor", hardware: "rev-b"), device: "d")
    }

    @Test func incompatibleFamilyOrHardwareIsRefused() throws {
        let directory = try makePackage(Self.valid)
        defer { try? FileManager.default.removeItem(at: directory) }
        let package = try FirmwarePackage.open(directory)
        let wrongFamily = try #require(throws: OTAError.self) { try package.checkCompatibility(with: family("lock", hardware: "rev-b"), device: "sim:x") }
        #expect(wrongFamily.code == .incompatible)
        #expect(wrongFamily.message.hasSuffix("manifest.json: families: the package is for sensor, not for sim:x's family 'lock'"))
        let wrongHardware = try #require(throws: OTAError.self) { try package.checkCompatibility(with: family("sensor", hardware: "rev-a"), device: "sim:x") }
        #expect(wrongHardware.message.hasSuffix("manifest.json: hardware: the package fits hardware rev-b, not sim:x's 'rev-a'"))
        let unknown = try #require(throws: OTAError.self) { try package.checkCompatibility(with: nil, device: "sim:x") }
        #expect(unknown.message.contains("matches no device family"))
    }

    @Test(arguments: [
        (#"{"package": 1, "images": [{"file": "app.bin", "size": SIZE, "sha256": "SHA"}], "colour": "red"}"#, "manifest.json: colour: unknown field"),
        (#"{"package": 1, "images": []}"#, "manifest.json: images: the package has no image"),
        (
            #"{"package": 1, "images": [{"file": "missing.bin", "size": SIZE, "sha256": "SHA"}]}"#,
            "manifest.json: images[0].file: 'missing.bin' is missing from the package"
        ),
        (
            #"{"package": 1, "images": [{"file": "../app.bin", "size": SIZE, "sha256": "SHA"}]}"#,
            "manifest.json: images[0].file: '../app.bin' points outside the package"
        ),
        (
            #"{"package": 1, "images": [{"file": "app.bin", "size": 4999, "sha256": "SHA"}]}"#,
            "manifest.json: images[0].size: declared 4999 bytes but 'app.bin' has 5000"
        ),
        (#"{"package": 1, "images": [{"file": "app.bin", "size": SIZE, "sha256": "00"}]}"#, "manifest.json: images[0].sha256: expected 64 hexadecimal digits"),
        (#"{"package": 1, "images": [{"file": "app.bin", "size": SIZE, "sha256": "SHA", "extra": 1}]}"#, "manifest.json: images[0].extra: unknown field"),
        (#"{"package": 1, "images": [{"file": "app.bin", "size": "big", "sha256": "SHA"}]}"#, "manifest.json: images[0].size: expected an integer"),
        (#"{"package": "one", "images": []}"#, "manifest.json: package: expected an integer"),
        (#"{"package": 1, "images": [{"file": "app.bin", "size": SIZE, "sha256": "SHA"}"#, "manifest.json: malformed JSON"),
    ])
    func badPackagesGetOneLineNamingFileAndField(manifest: String, expected: String) throws {
        let directory = try makePackage(manifest)
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = try #require(throws: OTAError.self) { try FirmwarePackage.open(directory) }
        #expect(error.code == .invalidManifest)
        #expect(error.message.contains(expected), "got: \(error.message)")
        #expect(error.message.hasPrefix(directory.path))
    }

    @Test func aReplacedImageFailsItsHash() throws {
        var tampered = Self.image
        tampered[100] ^= 1
        let directory = try makePackage(Self.valid, image: tampered)
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = try #require(throws: OTAError.self) { try FirmwarePackage.open(directory) }
        #expect(error.message.hasSuffix("manifest.json: images[0].sha256: 'app.bin' does not match its SHA-256 (corrupt or replaced file)"))
    }
}
