import Foundation
import OTACommandLine
import Synchronization
import Testing

@Suite struct UpdateCommandTests {
    @Test func updatesASimulatedDeviceAndSaysSo() async throws {
        let image = try temporaryImage(size: 50_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "sim:nrf52840-mtu244-2m"])
        #expect(code == 0)
        #expect(streams.standardOutput.hasPrefix("updated sim:nrf52840-mtu244-2m with \(image.lastPathComponent) (50000 bytes"))
        #expect(streams.standardError.contains("transferring"))
        #expect(streams.standardError.contains("100%"))
    }

    @Test func jsonModePrintsOneParsableObjectPerLine() async throws {
        let image = try temporaryImage(size: 20_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "sim:esp32-mtu185-1m", "--json"])
        #expect(code == 0)
        let objects = try streams.outputLines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        #expect(objects.count > 5)
        #expect(objects.first?["event"] as? String == "state")
        #expect(objects.contains { $0["event"] as? String == "link" && $0["chunkSize"] as? Int == 182 })
        let result = try #require(objects.last)
        #expect(result["event"] as? String == "result")
        #expect(result["status"] as? String == "completed")
        #expect(result["imageSize"] as? Int == 20_000)
        #expect(streams.standardError.isEmpty)
    }

    @Test(arguments: ["generic", "framed"])
    func maxChunkCapsThePayloadOfEveryWriteAndTheReportSaysSo(protocolName: String) async throws {
        let image = try temporaryImage(size: 20_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(
            ["update", image.path, "--protocol", protocolName, "--device", "sim:esp32-mtu185-1m", "--max-chunk", "100", "--json"]
        )
        #expect(code == 0, "\(streams.standardError)")
        let objects = try streams.outputLines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        #expect(objects.filter { $0["event"] as? String == "link" }.map { $0["chunkSize"] as? Int } == [100])
        let result = try #require(objects.last)
        #expect(result["status"] as? String == "completed")
        #expect(result["chunkSize"] as? Int == 100)
        #expect((result["bytesSent"] as? Int ?? 0) >= 20_000)
    }

    @Test func terminalGetsAProgressBar() async throws {
        let image = try temporaryImage(size: 30_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--sim-speed", "max"], terminal: true)
        #expect(code == 0)
        #expect(streams.standardError.contains("\r\u{1B}[2K["))
        #expect(streams.standardError.contains("█"))
    }

    /// Bad input: one line on standard error, a specific exit code, nothing on standard output.
    @Test(arguments: [
        (["update", "/nonexistent.bin", "--protocol", "generic"], Int32(3), "ota: error: /nonexistent.bin: no such file"),
        (["update", "EMPTY", "--protocol", "generic"], 3, "is empty: a firmware image needs at least one byte"),
        (["update", "IMAGE"], 2, "sim:esp32s3-mtu244-2m is a bare hardware profile that runs whatever protocol is chosen"),
        (["update", "IMAGE", "--protocol", "nordic"], 2, "unknown protocol 'nordic' (available: esp-ble-ota, framed, generic, mcumgr, nordic-dfu)"),
        (["update", "IMAGE", "--protocol", "generic", "--device", "sim:esp99"], 2, "no simulated device or profile 'esp99'"),
        (
            ["update", "IMAGE", "--protocol", "generic", "--device", "AA:BB:CC:DD"], 2,
            "is none of a Bluetooth address (AA:BB:CC:DD:EE:FF), a simulated device"
        ),
        (["update", "IMAGE", "--protocol", "generic", "--mtu", "9"], 2, "--mtu '9' is out of range, expected 23...517"),
        (["update", "IMAGE", "--protocol", "generic", "--max-chunk", "0"], 2, "--max-chunk '0' is out of range, expected 1...512"),
        (["update", "IMAGE", "--protocol", "generic", "--sim-speed", "fast"], 2, "--sim-speed 'fast' is not a positive number or 'max'"),
        (["update", "IMAGE", "--protocol", "generic", "--param", "nokey"], 2, "--param 'nokey' is not KEY=VALUE"),
        (["update", "IMAGE", "--protocol", "generic", "--param", "data-uuid=zz"], 2, "parameter 'data-uuid': 'zz' is not a Bluetooth UUID"),
        (["update", "IMAGE", "--protocol", "generic", "--param", "batch=3"], 2, "protocol 'generic' has no parameter 'batch'"),
        (["update", "BIG", "--protocol", "generic", "--device", "sim:nrf52840-mtu244-2m"], 3, "larger than the 1048576-byte update slot"),
        (["frobnicate"], 2, "unknown command 'frobnicate'"),
        (["update", "IMAGE", "--protocol", "generic", "--colour"], 2, "unknown option '--colour' for 'ota update'"),
    ])
    func badInputIsOneLineAndANonZeroExit(arguments: [String], expectedCode: Int32, fragment: String) async throws {
        let image = try temporaryImage(size: 100)
        let empty = try temporaryImage(size: 0)
        let big = try temporaryImage(size: (1 << 20) + 1)
        defer { for url in [image, empty, big] { try? FileManager.default.removeItem(at: url) } }
        let substituted = arguments.map { argument in
            switch argument {
            case "IMAGE": image.path
            case "EMPTY": empty.path
            case "BIG": big.path
            default: argument
            }
        }
        let (code, streams) = await runTool(substituted)
        #expect(code == expectedCode)
        #expect(streams.standardError.contains(fragment))
        #expect(streams.standardError.hasPrefix("ota: error: "))
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
        #expect(streams.standardOutput.isEmpty)
    }

    /// A real device address where no BlueZ answers for it (CI has no system bus; a developer's
    /// machine has no such device): one line, "device unavailable".
    @Test func aRealDeviceThatCannotBeReachedIsOneLine() async throws {
        let image = try temporaryImage(size: 100)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "00:AA:01:01:00:7F", "--json"])
        #expect(code == 4)
        #expect(streams.standardError.hasPrefix("ota: error: connecting to 00:AA:01:01:00:7F"))
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
    }

    @Test func everyCommandHasHelp() async {
        for command in ["update", "abort", "inspect", "scan", "doctor", "protocols", "devices", "benchmark"] {
            let (code, streams) = await runTool([command, "--help"])
            #expect(code == 0)
            #expect(streams.standardOutput.contains("usage: ota \(command)"))
        }
        let (code, streams) = await runTool(["--help"])
        #expect(code == 0)
        #expect(streams.standardOutput.contains("commands:"))
    }

    @Test func listsProtocolsAndDevices() async throws {
        let protocols = await runTool(["protocols", "--json"])
        #expect(protocols.code == 0)
        #expect(protocols.streams.standardOutput.contains("\"name\":\"generic\""))
        let devices = await runTool(["devices"])
        #expect(devices.code == 0)
        for name in ["esp32-mtu23-1m", "esp32-mtu185-1m", "esp32s3-mtu244-1m", "esp32s3-mtu244-2m", "nrf52840-mtu244-2m"] {
            #expect(devices.streams.standardOutput.contains("sim:\(name)"))
        }
    }
}

/// Issue 18 item 5: the image file overwritten in place while `ota update` sends it.
@Suite struct UpdateOfAChangingFileTests {
    /// Streams that overwrite one byte of `url` at `offset` when the first progress line is printed.
    final class ChangingStreams: OutputStreams {
        let captured = CapturedStreams()
        let url: URL
        let offset: Int
        let changed = Mutex(false)
        var errorIsTerminal: Bool { false }

        init(url: URL, offset: Int) {
            self.url = url
            self.offset = offset
        }

        func out(_ text: String) { captured.out(text) }
        func err(_ text: String) {
            captured.err(text)
            guard text.contains("%") else { return }
            changed.withLock { done in
                guard !done, let handle = try? FileHandle(forWritingTo: url) else { return }
                try? handle.seek(toOffset: UInt64(offset))
                try? handle.write(contentsOf: Data([0xA5]))
                try? handle.close()
                done = true
            }
        }
    }

    @Test(arguments: ["generic", "framed"])
    func aFileOverwrittenWhileSentFailsInOneLineWithANonZeroExit(protocolName: String) async throws {
        let image = try temporaryImage(size: 800_000)
        defer { try? FileManager.default.removeItem(at: image) }
        // The file holds 0x43 there (offset × 7 + 3), so writing 0xA5 changes it.
        let offset = 600_000
        let streams = ChangingStreams(url: image, offset: offset)
        let code = await CommandLineTool.run(
            ["update", image.path, "--protocol", protocolName, "--device", "sim:nrf52840-mtu244-2m", "--sim-speed", "max"], streams: streams)
        #expect(streams.changed.withLock { $0 }, "the file was changed during the update")
        #expect(code == 3)  // bad input: the firmware file (docs/cli.md's exit codes)
        let lines = streams.captured.standardError.split(separator: "\n").filter { $0.contains("changed while it was being sent") }
        #expect(lines.count == 1, "\(streams.captured.standardError)")
        #expect(
            lines.first?.contains(
                "\(image.lastPathComponent) changed while it was being sent (block at offset 589824); nothing more was written; run the update again") == true)
        #expect(streams.captured.standardOutput.isEmpty)
    }
}
