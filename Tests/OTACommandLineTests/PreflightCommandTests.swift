import Foundation
import OTACore
import Testing

@testable import OTACommandLine

/// The preflight from the command line: what it shows, what it refuses (one line, before the
/// first write), and --force.
@Suite struct PreflightCommandTests {
    private func nordicFixture() throws -> URL {
        try #require(Bundle.module.url(forResource: "app-unsigned", withExtension: "zip", subdirectory: "Fixtures"))
    }

    private func jsonObjects(_ streams: CapturedStreams) throws -> [[String: Any]] {
        try streams.outputLines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    /// Error lines, without the progress that precedes them.
    private func errorLines(_ streams: CapturedStreams) -> [String] {
        streams.standardError.split(separator: "\n").map(String.init).filter { $0.hasPrefix("ota: error: ") }
    }

    @Test func progressShowsWhatTheDeviceReported() async throws {
        let image = try temporaryImage(size: 20_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "sim:nrf52840"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardError.contains("] device: model nRF52840 by Nordic Semiconductor, hardware rev 52, firmware 1.0.0, battery 88%\n"))
    }

    @Test func jsonHasADeviceEventWithTheFields() async throws {
        let image = try temporaryImage(size: 20_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(
            ["update", image.path, "--protocol", "generic", "--device", "sim:esp32s3-mtu244-2m", "--sim-battery", "64", "--json"]
        )
        #expect(code == 0, "\(streams.standardError)")
        let device = try #require(try jsonObjects(streams).first { $0["event"] as? String == "device" })
        #expect(device["manufacturer"] as? String == "Espressif Systems")
        #expect(device["model"] as? String == "ESP32-S3-DevKitC-1")
        #expect(device["hardwareRevision"] as? String == "rev-C")
        #expect(device["firmwareRevision"] as? String == "2.0.1")
        #expect(device["battery"] as? Int == 64)
        #expect((device["unread"] as? [String]) == [])
        #expect(device["time"] is Double || device["time"] is Int)
    }

    @Test func jsonSaysWhatADeviceWithoutTheServicesCouldNotGive() async throws {
        let image = try temporaryImage(size: 5_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(
            ["update", image.path, "--protocol", "generic", "--sim-battery", "none", "--sim-hardware-rev", "none", "--min-battery", "30", "--json"]
        )
        #expect(code == 0, "\(streams.standardError)")
        let objects = try jsonObjects(streams)
        let device = try #require(objects.first { $0["event"] as? String == "device" })
        #expect(device["battery"] == nil && device["hardwareRevision"] == nil)
        #expect((device["unread"] as? [String]) == ["no hardware revision", "no Battery service"])
        #expect(objects.contains { $0["text"] as? String == "battery level unknown, so the 30% minimum (--min-battery) is not checked" })
    }

    /// A device's strings reach the terminal escaped and cut: a hostile revision cannot move the
    /// cursor or flood the screen.
    @Test func aDevicesStringsAreEscapedAndCut() async throws {
        let image = try temporaryImage(size: 5_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let revision = "rev\u{1B}[2J" + String(repeating: "x", count: 400)
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--sim-hardware-rev", revision])
        #expect(code == 0, "\(streams.standardError)")
        let line = try #require(streams.standardError.split(separator: "\n").first { $0.contains("device: model") })
        #expect(!line.contains("\u{1B}"))
        #expect(line.contains("hardware rev rev\\u{1B}[2J"))
        #expect(line.contains("(407 characters)"))
        #expect(line.count < 300)
    }

    @Test func batteryBelowTheMinimumIsOneLineBeforeTheFirstWrite() async throws {
        let image = try temporaryImage(size: 20_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--min-battery", "30", "--sim-battery", "12"])
        #expect(code == 4)
        #expect(errorLines(streams) == ["ota: error: battery at 12%, below the 30% this update needs (--min-battery); charge the device or pass --force"])
        #expect(!streams.standardError.contains("transferring"))
        #expect(streams.standardOutput.isEmpty)
    }

    /// Every device already matches its protocol's built-in family, so a catalog family with a
    /// minimum is exercised where the plan builds the policy.
    @Test func theCatalogFamilysMinimumIsNamedAndTheOptionOverridesIt() throws {
        let family = DeviceFamily(
            name: "charged-sensor", match: .init(namePattern: GlobPattern("Acme-*")), protocolName: "generic", minimumBattery: 30, source: "c.json"
        )
        let descriptor = try BuiltInProtocols.registry.descriptor(named: "generic")
        let fromFamily = try UpdatePlan.preflightPolicy(
            ParsedArguments(), family: family, package: nil, descriptor: descriptor, client: try descriptor.makeClient([:]), images: [], command: "update"
        )
        #expect(fromFamily.minimumBattery == .init(percent: 30, source: "catalog family 'charged-sensor'"))
        let refusal = try #require(
            Preflight(policy: fromFamily, responseTimeout: .seconds(1), clock: ContinuousClock())
                .check(DeviceInformation(batteryLevel: 12)).refusals.first)
        #expect(refusal.message == "battery at 12%, below the 30% this update needs (catalog family 'charged-sensor'); charge the device or pass --force")
        let fromOption = try UpdatePlan.preflightPolicy(
            ParsedArguments(values: ["--min-battery": ["10"]]), family: family, package: nil, descriptor: descriptor, client: try descriptor.makeClient([:]),
            images: [], command: "update"
        )
        #expect(fromOption.minimumBattery == .init(percent: 10, source: "--min-battery"))
    }

    @Test func aPackageForOtherHardwareIsOneLineBeforeTheFirstWrite() async throws {
        let package = try temporaryPackage(size: 1000) { size, sha in
            #"{"package": 1, "protocol": "generic", "hardware": ["rev-B", "rev-C"], "images": [{"file": "app.bin", "size": \#(size), "sha256": "\#(sha)"}]}"#
        }
        defer { try? FileManager.default.removeItem(at: package) }
        let manifest = package.appendingPathComponent("manifest.json").path
        let (code, streams) = await runTool(["update", package.path, "--sim-hardware-rev", "rev-A"])
        #expect(code == 3)
        #expect(
            errorLines(streams) == [
                "ota: error: device hardware revision 'rev-A' does not match the package (rev-B, rev-C in \(manifest) hardware); use firmware built for 'rev-A' or pass --force"
            ])
        #expect(!streams.standardError.contains("transferring"))
        let (matching, matched) = await runTool(["update", package.path, "--sim-hardware-rev", "REV-c"])
        #expect(matching == 0, "\(matched.standardError)")
        let (unknown, unknownStreams) = await runTool(["update", package.path, "--sim-hardware-rev", "none"])
        #expect(unknown == 3)
        #expect(
            errorLines(unknownStreams) == [
                "ota: error: the device's hardware revision is unknown, so the package's hardware (rev-B, rev-C in \(manifest) hardware) cannot be checked; update a device that reports it or pass --force"
            ])
    }

    @Test func aNordicPackageForOtherHardwareIsOneLineBeforeTheFirstWrite() async throws {
        let (code, streams) = await runTool(["update", try nordicFixture().path, "--device", "sim:nrf-tracker", "--sim-hardware-rev", "51"])
        #expect(code == 3)
        #expect(
            errorLines(streams) == [
                "ota: error: device hardware revision '51' does not match the package (hw_version 52 in app.bin's init packet); use firmware built for '51' or pass --force"
            ])
        #expect(!streams.standardError.contains("transferring"))
        let (text, textStreams) = await runTool(["update", try nordicFixture().path, "--device", "sim:nrf-tracker", "--sim-hardware-rev", "PCA10056 2.0"])
        #expect(text == 0, "\(textStreams.standardError)")
        #expect(
            textStreams.standardError.contains(
                "the device's hardware revision 'PCA10056 2.0' is not an integer, so hw_version 52 in app.bin's init packet is not compared here (the bootloader checks hw_version itself)"
            ))
    }

    @Test func forcePassesBothAndSaysSo() async throws {
        let (code, streams) = await runTool(
            [
                "update", try nordicFixture().path, "--device", "sim:nrf-tracker", "--sim-hardware-rev", "51", "--sim-battery", "5", "--min-battery", "20",
                "--force",
            ]
        )
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardError.contains("battery at 5%, below the 20% this update needs (--min-battery); updating anyway (--force)"))
        #expect(
            streams.standardError.contains(
                "device hardware revision '51' does not match the package (hw_version 52 in app.bin's init packet); updating anyway (--force)"
            ))
        #expect(streams.standardOutput.hasPrefix("updated sim:nrf-tracker"))
    }

    @Test func dryRunSaysWhatIsReadAndChecked() async throws {
        let (code, streams) = await runTool(
            ["update", try nordicFixture().path, "--device", "sim:nrf-tracker", "--min-battery", "25", "--force", "--dry-run"]
        )
        #expect(code == 0, "\(streams.standardError)")
        let preflight = streams.outputLines.filter { $0.hasPrefix("preflight: ") }
        #expect(
            preflight == [
                "preflight: on connecting, before the first write, reads Battery Level and Device Information (manufacturer, model, hardware and firmware revision) when the device has them",
                "preflight: refuses a battery below 25% (--min-battery)",
                "preflight: the device's hardware revision must match hw_version 52 in app.bin's init packet",
                "preflight: --force: a refusal is reported and the update goes on",
            ])
        let (plainCode, plain) = await runTool(["update", try nordicFixture().path, "--device", "sim:nrf-tracker", "--dry-run"])
        #expect(plainCode == 0)
        #expect(plain.outputLines.contains("preflight: no battery minimum (--min-battery PERCENT or a family's minBattery sets one)"))
    }

    @Test func aResumeDoesNotReadOrCheckAgain() async throws {
        let image = try temporaryImage(size: 40_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(
            ["update", image.path, "--device", "sim:bolt-lock", "--sim-disconnect-at", "50%", "--min-battery", "80", "--json"]
        )
        #expect(code == 0, "\(streams.standardError)")
        let objects = try jsonObjects(streams)
        #expect(objects.filter { $0["event"] as? String == "device" }.count == 1)
        #expect((objects.last?["resumes"] as? Int ?? 0) >= 1)
    }

    @Test(arguments: [
        (["--min-battery", "101"], "--min-battery '101' is out of range, expected 0...100"),
        (["--sim-battery", "full"], "--sim-battery 'full' is not a percentage in 0...100 or 'none'"),
    ])
    func badValuesAreUsageErrors(arguments: [String], fragment: String) async throws {
        let image = try temporaryImage(size: 100)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic"] + arguments)
        #expect(code == 2)
        #expect(streams.standardError.contains(fragment), "\(streams.standardError)")
    }
}

/// The package's version against the device's firmware revision (sim:esp32s3-mtu244-2m runs 2.0.1).
@Suite struct DowngradeCommandTests {
    func package(version: String) throws -> URL {
        try temporaryPackage(size: 2000) { size, sha in
            #"{"package": 1, "protocol": "generic", "version": "\#(version)", "images": [{"file": "app.bin", "size": \#(size), "sha256": "\#(sha)"}]}"#
        }
    }

    @Test func anOlderPackageIsRefusedBeforeTheFirstWriteAndAllowedWithTheFlag() async throws {
        let older = try package(version: "1.5.0")
        defer { try? FileManager.default.removeItem(at: older) }
        let (code, streams) = await runTool(["update", older.path, "--device", "sim:esp32s3-mtu244-2m"])
        #expect(code == 3, "\(streams.standardError)")
        #expect(streams.standardError.contains("the device runs firmware 2.0.1, newer than the 1.5.0 of the package manifest; pass --allow-downgrade"))
        #expect(!streams.standardError.contains("transferring"))
        let (allowed, allowedStreams) = await runTool(["update", older.path, "--device", "sim:esp32s3-mtu244-2m", "--allow-downgrade"])
        #expect(allowed == 0, "\(allowedStreams.standardError)")
        #expect(allowedStreams.standardError.contains("installing the older version (--allow-downgrade)"))
    }

    @Test func aNewerPackageSaysFromWhatToWhat() async throws {
        let newer = try package(version: "2.1.0")
        defer { try? FileManager.default.removeItem(at: newer) }
        let (code, streams) = await runTool(["update", newer.path, "--device", "sim:esp32s3-mtu244-2m"])
        #expect(code == 0)
        #expect(streams.standardError.contains("version: device 2.0.1 → 2.1.0 (the package manifest)"))
        let (_, dryRun) = await runTool(["update", newer.path, "--device", "sim:esp32s3-mtu244-2m", "--dry-run"])
        #expect(dryRun.standardOutput.contains("preflight: installs 2.1.0 (the package manifest); refused if the device's firmware revision is newer"))
    }
}
