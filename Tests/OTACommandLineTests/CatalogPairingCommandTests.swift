import Foundation
import Testing

@testable import OTACommandLine

/// A catalog family's `pairing` in the plan: shown by `--dry-run`, carried to the session,
/// overridden by `--pairing`/`--passkey`, ignored by a transport that cannot pair.
@Suite struct CatalogPairingCommandTests {
    static func catalog() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-pairing-catalog-\(UUID().uuidString).json")
        try Data(
            #"{"catalog": 1, "families": [{"name": "paired-sensor", "match": {"name": "ACME-Sensor*"}, "protocol": "generic", "pairing": {"passkey": "123456"}}]}"#
                .utf8
        ).write(to: url)
        return url
    }

    @Test func theDryRunSaysHowTheFamilyPairsAndTheCommandLineOverridesIt() async throws {
        let image = try temporaryImage(size: 4096)
        let catalog = try Self.catalog()
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: catalog)
        }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:acme-sensor", "--catalog", catalog.path, "--dry-run"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(
            streams.outputLines.contains(
                "pairing: before the first write, Passkey Entry with the family's passkey, bond removed afterwards (catalog family 'paired-sensor'); --pairing or --passkey overrides it; a transport that cannot pair (the simulator, UDP, serial) ignores it"
            ), "\(streams.standardOutput)")

        let (_, overridden) = await runTool([
            "update", image.path, "--device", "sim:acme-sensor", "--catalog", catalog.path, "--dry-run", "--pairing", "auto",
        ])
        #expect(!overridden.standardOutput.contains("pairing:"), "\(overridden.standardOutput)")

        let (_, json) = await runTool(["update", image.path, "--device", "sim:acme-sensor", "--catalog", catalog.path, "--dry-run", "--json"])
        let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        let pairing = try #require(plan["pairing"] as? [String: Any])
        #expect(pairing["source"] as? String == "catalog family 'paired-sensor'")
        #expect(pairing["passkey"] as? Bool == true)
        // The passkey itself is not printed.
        #expect(!json.standardOutput.contains("123456"))
    }

    @Test func theSimulatorUpdatesAFamilyThatAsksForPairing() async throws {
        let image = try temporaryImage(size: 4096)
        let catalog = try Self.catalog()
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: catalog)
        }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:acme-sensor", "--catalog", catalog.path])
        #expect(code == 0, "\(streams.standardError)")
    }
}
