import Foundation
import OTACore
import Testing

/// Writes `text` to a temporary file and returns its path.
func temporaryFile(_ text: String, name: String = "catalog.json") throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let url = directory.appendingPathComponent(name)
    try Data(text.utf8).write(to: url)
    return url
}

/// A package directory with one image and a manifest built by `manifest(size, sha256)`.
func temporaryPackage(size: Int, manifest: (Int, String) -> String) throws -> URL {
    let image = try temporaryImage(size: size)
    let bytes = try Data(contentsOf: image)
    let directory = image.deletingLastPathComponent().appendingPathComponent("pkg-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try bytes.write(to: directory.appendingPathComponent("app.bin"))
    try FileManager.default.removeItem(at: image)
    let digest = Hex.bytes(SHA256.hash(bytes))
    try Data(manifest(size, digest).utf8).write(to: directory.appendingPathComponent("manifest.json"))
    return directory
}

@Suite struct SelectionCommandTests {
    /// One family per shipped protocol drives three simulated devices to the right protocol.
    @Test func theCatalogPicksTheProtocolForEachFleetDevice() async throws {
        let image = try temporaryImage(size: 40_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let nordicPackage = try #require(Bundle.module.url(forResource: "app-unsigned", withExtension: "zip", subdirectory: "Fixtures"))
        for (device, firmware, expected) in [
            ("sim:acme-sensor", image.path, "generic"), ("sim:bolt-lock", image.path, "framed"), ("sim:nrf-tracker", nordicPackage.path, "nordic-dfu"),
        ] {
            let (code, streams) = await runTool(["update", firmware, "--device", device])
            #expect(code == 0, "\(device): \(streams.standardError)")
            #expect(streams.standardOutput.contains("over \(expected) in"), "\(device): \(streams.standardOutput)")
        }
    }

    @Test func dryRunExplainsWithoutConnecting() async throws {
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:bolt-lock", "--dry-run"])
        #expect(code == 0)
        #expect(streams.standardOutput.contains("because: sim:bolt-lock matches family 'framed-ota' (built-in catalog): advertises 4f544200"))
        #expect(streams.standardOutput.contains("protocol: framed"))
        #expect(!streams.standardError.contains("connecting"))
    }

    @Test func scanListsFamilyProtocolAndWhy() async throws {
        let (code, streams) = await runTool(["scan", "--json"])
        #expect(code == 0)
        let objects = try streams.outputLines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.map { $0["address"] as? String } == ["sim:acme-sensor", "sim:bolt-lock", "sim:nrf-tracker", "sim:zephyr-sensor", "sim:esp-lamp"])
        #expect(objects.map { $0["protocol"] as? String } == ["generic", "framed", "nordic-dfu", "mcumgr", "esp-ble-ota"])
        #expect((objects[1]["why"] as? String)?.contains("advertises 4f544200") == true)
    }

    @Test func aCatalogFileTakesPrecedenceOverTheBuiltInOne() async throws {
        let catalog = try temporaryFile(#"{"catalog": 1, "families": [{"name": "locks", "match": {"name": "BoltLock*"}, "protocol": "framed", "mtu": 185}]}"#)
        defer { try? FileManager.default.removeItem(at: catalog.deletingLastPathComponent()) }
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:bolt-lock", "--catalog", catalog.path, "--dry-run"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput.contains("family 'locks'"), "\(streams.standardOutput)")
        #expect(streams.standardOutput.contains("ATT MTU offered: 185"))
    }

    @Test func twoCatalogFilesCanMakeAMatchAmbiguous() async throws {
        let first = try temporaryFile(#"{"catalog": 1, "families": [{"name": "locks", "match": {"name": "BoltLock*"}, "protocol": "generic"}]}"#)
        let second = try temporaryFile(#"{"catalog": 1, "families": [{"name": "bolts", "match": {"name": "BoltLock*"}, "protocol": "framed"}]}"#)
        defer {
            try? FileManager.default.removeItem(at: first.deletingLastPathComponent())
            try? FileManager.default.removeItem(at: second.deletingLastPathComponent())
        }
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:bolt-lock", "--catalog", first.path, "--catalog", second.path])
        #expect(code == 2)
        #expect(
            streams.standardError
                == "ota: error: sim:bolt-lock matches 2 device families: 'locks' (\(first.path)) and 'bolts' (\(second.path)); make their match rules exclusive\n"
        )
    }

    @Test func aPackageIsVerifiedAndCanChooseTheProtocol() async throws {
        let package = try temporaryPackage(size: 30_000) { size, sha in
            #"{"package": 1, "name": "demo", "version": "1.0", "protocol": "framed", "images": [{"file": "app.bin", "size": \#(size), "sha256": "\#(sha)"}]}"#
        }
        defer { try? FileManager.default.removeItem(at: package) }
        let (code, streams) = await runTool(["update", package.path, "--device", "sim:nrf52840-mtu244-2m"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput.contains("over framed in"))
    }

    @Test func packageAndCatalogDisagreeing() async throws {
        let package = try temporaryPackage(size: 1000) { size, sha in
            #"{"package": 1, "protocol": "generic", "images": [{"file": "app.bin", "size": \#(size), "sha256": "\#(sha)"}]}"#
        }
        defer { try? FileManager.default.removeItem(at: package) }
        let (code, streams) = await runTool(["update", package.path, "--device", "sim:bolt-lock"])
        #expect(code == 2)
        #expect(streams.standardError.contains("says protocol 'generic' but sim:bolt-lock's family 'framed-ota' (built-in catalog) says 'framed'"))
    }

    @Test(arguments: [
        (#"{"package": 1, "images": [{"file": "app.bin", "size": 999, "sha256": "SHA"}]}"#, "images[0].size: declared 999 bytes but 'app.bin' has 1000"),
        (
            #"{"package": 1, "families": ["framed-ota"], "images": [{"file": "app.bin", "size": 1000, "sha256": "SHA"}]}"#,
            "families: the package is for framed-ota, not for sim:acme-sensor's family 'generic-ota'"
        ),
        (#"{"package": 1, "images": [{"file": "other.bin", "size": 1000, "sha256": "SHA"}]}"#, "images[0].file: 'other.bin' is missing from the package"),
        (#"{"package": 1, "images": [{"file": "app.bin", "size": 1000, "sha256": "SHA"}], "protocol": "nordic"}"#, "unknown protocol 'nordic'"),
    ])
    func badPackagesAreRefusedBeforeConnecting(manifest: String, fragment: String) async throws {
        let package = try temporaryPackage(size: 1000) { _, sha in manifest.replacingOccurrences(of: "SHA", with: sha) }
        defer { try? FileManager.default.removeItem(at: package) }
        let (code, streams) = await runTool(["update", package.path, "--device", "sim:acme-sensor"])
        #expect(code != 0)
        #expect(streams.standardError.contains(fragment), "got: \(streams.standardError)")
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
        #expect(!streams.standardError.contains("connecting"))
    }

    @Test(arguments: [
        ("{", "malformed JSON"),
        (#"{"catalog": 1, "families": [{"name": "x", "match": {"name": "y"}, "protocol": "zigbee"}]}"#, "families[0].protocol: unknown protocol 'zigbee'"),
        (
            #"{"catalog": 1, "families": [{"name": "generic-ota", "match": {"name": "y"}, "protocol": "generic"}]}"#,
            "family 'generic-ota' is defined in both built-in catalog and"
        ),
    ])
    func badCatalogsAreOneLineErrors(json: String, fragment: String) async throws {
        let catalog = try temporaryFile(json)
        defer { try? FileManager.default.removeItem(at: catalog.deletingLastPathComponent()) }
        let (code, streams) = await runTool(["scan", "--catalog", catalog.path])
        #expect(code == 3)
        #expect(streams.standardError.contains(fragment), "got: \(streams.standardError)")
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
    }

    @Test func missingCatalogFileIsNamed() async throws {
        let (code, streams) = await runTool(["scan", "--catalog", "/nonexistent/catalog.json"])
        #expect(code == 3)
        #expect(streams.standardError == "ota: error: /nonexistent/catalog.json: cannot be read (does it exist?)\n")
    }
}
