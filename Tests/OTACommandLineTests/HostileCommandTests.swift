import Foundation
import OTACore
import OTATestSupport
import Testing

@testable import OTACommandLine

/// Issue 14: hostile input to `ota` gets one line and a non-zero exit, before anything connects.
@Suite(.serialized) struct HostileCommandTests {
    // Row 7: SIGTERM and SIGHUP pause like Ctrl-C instead of killing the process unsaved.

    /// The `ota` executable beside the test bundle, built with the tests.
    static let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ota")

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: executable.path)), arguments: [SIGTERM, SIGHUP])
    func sigtermAndSighupPauseLikeCtrlCAndSaveTheSimulatedDevice(signalNumber: Int32) async throws {
        #expect(CommandLineTool.interruptSignals == [SIGINT, SIGTERM, SIGHUP])
        let image = try temporaryImage(size: 400_000)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("ota-signal-state-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: state)
        }
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = [
            "update", image.path, "--protocol", "framed", "--device", "sim:esp32s3-mtu244-2m", "--sim-speed", "1", "--sim-state", state.path,
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Signal once the transfer is under way (its handlers are installed long before), not
        // after a fixed delay: on a loaded machine the tool can take longer than any delay to start.
        // Read, signalled and waited for on a thread of its own (offThePool), the signal sent from
        // that thread as soon as the line is read: never blocking the cooperative pool.
        let reader = errors.fileHandleForReading
        let text = await offThePool { () -> String in
            var seen = Data()
            while !String(decoding: seen, as: UTF8.self).contains("transferring") {
                let chunk = reader.availableData
                guard !chunk.isEmpty else { break }
                seen.append(chunk)
            }
            kill(process.processIdentifier, signalNumber)
            process.waitUntilExit()
            return String(decoding: seen + reader.readDataToEndOfFile(), as: UTF8.self)
        }
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 130, "\(text)")
        #expect(text.hasSuffix("ota: interrupted: the device keeps what it received; run the same command again to continue or restart\n"))
        #expect(try !FileManager.default.contentsOfDirectory(atPath: state.path).isEmpty)
    }

    // Row 3: the firmware file truncated while the update runs changes nothing: the bytes were
    // read once (mapped, the process died of SIGBUS and the simulated device was not saved).

    @Test func aFirmwareFileTruncatedDuringTheUpdateIsSentAsItWas() async throws {
        let image = try temporaryImage(size: 150_000)
        let original = try Data(contentsOf: image)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("ota-truncate-state-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: state)
        }
        let truncation = Task {
            try await Task.sleep(for: .milliseconds(500))
            #expect(truncate(image.path, 0) == 0)
        }
        let (code, streams) = await runTool([
            "update", image.path, "--protocol", "framed", "--device", "sim:esp32s3-mtu244-2m", "--sim-speed", "1", "--sim-state", state.path,
        ])
        try await truncation.value
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput.contains("(150000 bytes, CRC-32 \(Hex.number(CRC32.checksum(original), digits: 8)))"), "\(streams.standardOutput)")
        #expect(try !FileManager.default.contentsOfDirectory(atPath: state.path).isEmpty)
    }

    // Row 8: what the chosen protocol cannot send is refused before connecting, with the reason.

    private func nordicZip() throws -> URL {
        try #require(Bundle.module.url(forResource: "app-unsigned", withExtension: "zip", subdirectory: "Fixtures"))
    }

    @Test(arguments: ["generic", "framed"])
    func aNordicZipSentToARawImageProtocolIsRefused(protocolName: String) async throws {
        let (code, streams) = await runTool(["update", try nordicZip().path, "--protocol", protocolName, "--device", "sim:esp32s3-mtu244-2m"])
        #expect(code == 3)
        #expect(
            streams.standardError
                == "ota: error: app-unsigned.zip is a nordic-dfu container, but \(protocolName) sends an image as it is: use --protocol nordic-dfu, or send the image inside\n"
        )
    }

    @Test func aBinWithoutItsInitPacketIsRefusedBeforeConnecting() async throws {
        let image = try temporaryImage(size: 4096)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "nordic-dfu", "--device", "sim:nrf52840"])
        #expect(code == 3)
        #expect(
            streams.standardError
                == "ota: error: \(image.lastPathComponent): Nordic DFU needs an init packet (.dat); give the DFU .zip package or a .bin with its .dat\n"
        )
    }

    // Row 9: `inspect` gives a package the verdict `update` gives it.

    private func package(protocolName: String, images: Int) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-hostile-package-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let bytes = Data((0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 5) })
        var entries: [String] = []
        for index in 0..<images {
            try bytes.write(to: directory.appendingPathComponent("part\(index).bin"))
            entries.append(#"{"file": "part\#(index).bin", "size": 2048, "sha256": "\#(Hex.bytes(SHA256.hash(bytes)))"}"#)
        }
        try Data(#"{"package": 1, "protocol": "\#(protocolName)", "images": [\#(entries.joined(separator: ","))]}"#.utf8)
            .write(to: directory.appendingPathComponent("manifest.json"))
        return directory
    }

    @Test(arguments: [("no-such-protocol", 1), ("generic", 2)])
    func inspectAndUpdateGiveAPackageTheSameVerdict(protocolName: String, images: Int) async throws {
        let directory = try package(protocolName: protocolName, images: images)
        defer { try? FileManager.default.removeItem(at: directory) }
        let update = await runTool(["update", directory.path, "--device", "sim:esp32s3-mtu244-2m"])
        let inspect = await runTool(["inspect", directory.path])
        #expect(update.code == 3)
        #expect(inspect.code == update.code)
        #expect(inspect.streams.standardError == update.streams.standardError)
        #expect(!inspect.streams.standardOutput.contains("consistent"))
        let expected =
            images == 2
            ? "ota: error: \(directory.path)/manifest.json: images: the package has 2 images, but this protocol sends one file\n"
            : "ota: error: \(directory.path)/manifest.json: protocol: "
        #expect(update.streams.standardError.hasPrefix(expected), "\(update.streams.standardError)")
    }

    // Row 6: the documented example catalog works for devices that advertise a shipped protocol's
    // service: the user's families take precedence over the built-in ones.

    @Test func theExampleCatalogInTheManualTakesPrecedenceOverTheBuiltInOne() throws {
        let manual = try String(contentsOf: DocumentedCommandsTests.packageRoot.appendingPathComponent("docs/manifest.md"), encoding: .utf8)
        let start = try #require(manual.range(of: "```json\n"))
        let end = try #require(manual.range(of: "```", range: start.upperBound..<manual.endIndex))
        let file = try temporaryFile(String(manual[start.upperBound..<end.lowerBound]))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        var environment = ToolEnvironment.standard
        environment.userCatalogPath = nil
        let catalog = try environment.catalog(adding: [file.path])
        let sensor = Advertisement(
            name: "ACME-Sensor-12", serviceUUIDs: [try #require(GATTUUID("4f544100-8a2e-4c1b-9f3d-2b7e5c6a0001"))],
            manufacturerData: [0x02E5: Data([0x41, 0x53, 0x07])]
        )
        #expect(try catalog.family(for: sensor, device: "sensor")?.name == "acme-sensor")
        let lock = Advertisement(
            name: "BoltLock 3", serviceUUIDs: [try #require(GATTUUID("4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001"))], manufacturerData: [0x02E5: Data([0x42, 0x4C])]
        )
        #expect(try catalog.family(for: lock, device: "lock")?.name == "bolt-lock")
        // A device the example does not describe still gets the built-in family.
        let other = Advertisement(name: "Other", serviceUUIDs: [try #require(GATTUUID("4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001"))])
        #expect(try catalog.family(for: other, device: "other")?.name == "framed-ota")
    }

    // Row 10: a huge name from the command line is not echoed back whole.

    @Test(arguments: [
        ["update", "LONG", "--protocol", "generic"], ["inspect", "LONG"], ["update", "x.bin", "--protocol", "LONG"], ["update", "x.bin", "--catalog", "LONG"],
    ])
    func aMillionCharacterArgumentIsCutInTheMessage(arguments: [String]) async throws {
        let long = "/tmp/" + String(repeating: "n", count: 1_000_000)
        let (code, streams) = await runTool(arguments.map { $0 == "LONG" ? long : $0 })
        #expect(code != 0)
        #expect(streams.standardError.count < 1000, "\(streams.standardError.prefix(300))")
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
    }
}
