import Foundation
import Testing

/// `--key FILE` and a family's `keys`: signatures checked before anything connects.
@Suite struct SignatureCommandTests {
    static let nordic = DocumentedCommandsTests.packageRoot.appendingPathComponent("Tests/OTAProtocolNordicDFUTests/Fixtures")
    static let mcuboot = DocumentedCommandsTests.packageRoot.appendingPathComponent("Tests/OTAProtocolMCUmgrTests/Fixtures")
    /// Signed by `test-key.pem` (key A), on a SoftDevice the simulated nrf-tracker has.
    static let package = nordic.appendingPathComponent("app-boot-ecdsa.zip").path
    static let keyA = nordic.appendingPathComponent("test-key.pub.pem").path
    static let keyB = nordic.appendingPathComponent("other-key.pub.pem").path

    @Test func theSigningKeyLetsTheUpdateThroughAndSaysSo() async {
        let (code, streams) = await runTool(["update", Self.package, "--device", "sim:nrf-tracker", "--key", Self.keyA])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardError.hasPrefix("signature: app.dat: signature verified with test-key.pub.pem (ECDSA P-256, "))
    }

    @Test func anotherKeyIsRefusedBeforeConnecting() async {
        let (code, streams) = await runTool(["update", Self.package, "--device", "sim:nrf-tracker", "--key", Self.keyB])
        #expect(code == 3)
        #expect(streams.standardError.hasPrefix("ota: error: app.dat's signature does not verify with other-key.pub.pem (ECDSA P-256, "))
        #expect(streams.standardError.split(separator: "\n").count == 1)
        #expect(!streams.standardError.contains("connecting"))
    }

    @Test func aFamilysKeysApplyAndAreRelativeToItsCatalog() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ota-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, source) in [("a.pem", Self.keyA), ("b.pem", Self.keyB)] {
            try FileManager.default.copyItem(atPath: source, toPath: folder.appendingPathComponent(name).path)
        }
        func catalog(_ key: String) throws -> String {
            let url = folder.appendingPathComponent("catalog-\(key).json")
            try Data(
                #"{"catalog": 1, "families": [{"name": "tracker", "match": {"name": "DfuTarg"}, "protocol": "nordic-dfu", "keys": ["\#(key)"]}]}"#.utf8
            ).write(to: url)
            return url.path
        }
        let trusted = try catalog("a.pem")
        let untrusted = try catalog("b.pem")
        let (code, streams) = await runTool(["update", Self.package, "--device", "sim:nrf-tracker", "--catalog", trusted, "--dry-run"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput.contains("signature: app.dat: signature verified with a.pem"))
        let (refused, refusal) = await runTool(["update", Self.package, "--device", "sim:nrf-tracker", "--catalog", untrusted, "--dry-run"])
        #expect(refused == 3)
        #expect(refusal.standardError.contains("does not verify with b.pem"))
    }

    @Test func anUnsignedPackageIsRefusedWhenAKeyIsTrusted() async {
        let unsigned = Self.nordic.appendingPathComponent("app-unsigned.zip").path
        let (code, streams) = await runTool(["update", unsigned, "--device", "sim:nrf-tracker", "--key", Self.keyA])
        #expect(code == 3)
        #expect(streams.standardError.contains("app.dat is not signed"))
    }

    @Test func aKeyForAProtocolWithoutSignaturesIsAUsageMistake() async throws {
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--key", Self.keyA])
        #expect(code == 2)
        #expect(streams.standardError.contains("generic images carry no signature to check against test-key.pub.pem"))
    }

    @Test(arguments: ["/nonexistent.pem", DocumentedCommandsTests.packageRoot.appendingPathComponent("README.md").path])
    func aKeyFileThatIsNoKeyIsOneLine(path: String) async {
        let (code, streams) = await runTool(["update", Self.package, "--device", "sim:nrf-tracker", "--key", path])
        #expect(code == 2)
        #expect(streams.standardError.split(separator: "\n").count == 1)
        #expect(streams.standardError.contains("key "))
    }
}
