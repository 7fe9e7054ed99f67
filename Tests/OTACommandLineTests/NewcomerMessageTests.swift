import Foundation
import OTACommandLine
import Testing

/// Issue 11, items 2–4: every message says its thing once, says the right thing, and the output
/// is what the docs promise. Each test asserts the exact line.
@Suite struct NewcomerMessageTests {
    /// The lines a person sees on standard error: what is left of each line after the last
    /// carriage-return-and-erase (a redrawn bar or a bar a line replaced).
    private static func visibleLines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            String(line.components(separatedBy: "\r\u{1B}[2K").last ?? "")
        }
    }

    private static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("ota-sim-\(UUID().uuidString)")
    }

    private static func json(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    // MARK: - Item 2: messages that repeat themselves

    /// "link lost" once; the reason printed once, as the error; generic, told not to restart, says to run it again.
    @Test func aLostLinkIsSaidOnceAndGenericSaysToRunAgain() async throws {
        let image = try temporaryImage(size: 200_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:acme-sensor", "--sim-disconnect-at", "50%", "--resume-attempts", "0"])
        #expect(code == 5)
        let lines = streams.standardError.split(separator: "\n").map(String.init)
        #expect(
            lines.suffix(2) == [
                "[2.1s] failed",
                "ota: error: sending data at byte 104188: link lost: injected fault; this protocol cannot resume: run the same command again to start over",
            ])
        #expect(lines.filter { $0.contains("link lost") }.count == 1)
    }

    /// Ctrl-C: the state line says who stopped it, the last line what that means, once.
    @Test func anInterruptionSaysWhatItMeansOnce() async throws {
        // 2 MB: about 30 s at real speed, so that the interrupt lands mid-transfer even when this
        // test's task is starved for many seconds by a loaded machine (the update runs on the
        // simulation's own thread and is not); a timely interrupt ends it within a second.
        let image = try temporaryImage(size: 2_000_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let streams = CapturedStreams()
        let run = Task { await CommandLineTool.run(["update", image.path, "--protocol", "generic", "--sim-speed", "1"], streams: streams) }
        // Interrupt once data is flowing, not after a fixed delay.
        let deadline = ContinuousClock.now + .seconds(60)
        while !streams.standardError.contains("transferring"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(300))
        run.cancel()
        #expect(await run.value == 130)
        let lines = streams.standardError.split(separator: "\n").map(String.init)
        #expect(lines.dropLast().last?.hasSuffix("] paused: stopped by the user") == true, "\(lines)")
        #expect(lines.last == "ota: interrupted: the device keeps what it received; run the same command again to continue or restart")
        #expect(lines.filter { $0.contains("keeps what it received") }.count == 1)
    }

    @Test func anUnknownAddressHasOneHint() async throws {
        let image = try temporaryImage(size: 100)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "foo"])
        #expect(code == 2)
        #if os(Linux)
        #expect(
            streams.standardError
                == "ota: error: device 'foo' is none of a Bluetooth address (AA:BB:CC:DD:EE:FF), a simulated device (sim:NAME), an SMP address over UDP (udp:HOST[:PORT]) or a serial port (serial:/dev/ttyACM0) (see 'ota update --help')\n"
        )
        #else
        #expect(
            streams.standardError
                == "ota: error: device 'foo' is none of a simulated device (sim:NAME), an SMP address over UDP (udp:HOST[:PORT]) or a serial port (serial:/dev/ttyACM0) (see 'ota update --help')\n"
        )
        #endif
    }

    /// An integer out of range is not "not an integer", for options and protocol parameters alike.
    @Test(arguments: [
        (["--protocol", "generic", "--mtu", "5"], "ota: error: --mtu '5' is out of range, expected 23...517 (see 'ota update --help')"),
        (["--protocol", "generic", "--mtu", "x"], "ota: error: --mtu 'x' is not an integer, expected 23...517 (see 'ota update --help')"),
        (["--protocol", "generic", "--max-chunk", "1.5"], "ota: error: --max-chunk '1.5' is not an integer, expected 1...512 (see 'ota update --help')"),
        (["--protocol", "generic", "--seed", "-1"], "ota: error: --seed '-1' is out of range, expected 0 or more (see 'ota update --help')"),
        (["--protocol", "generic", "--seed", "one"], "ota: error: --seed 'one' is not an integer, expected 0 or more (see 'ota update --help')"),
        (["--protocol", "framed", "--param", "batch=0"], "ota: error: parameter 'batch': '0' is out of range, expected 1...1024 (see 'ota protocols --help')"),
        (
            ["--protocol", "framed", "--param", "batch=x"],
            "ota: error: parameter 'batch': 'x' is not an integer, expected 1...1024 (see 'ota protocols --help')"
        ),
    ])
    func integersOutOfRangeAreNotCalledNonIntegers(options: [String], line: String) async throws {
        let image = try temporaryImage(size: 100)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path] + options)
        #expect(code == 2)
        #expect(streams.standardError == line + "\n")
    }

    @Test func benchmarkSeedIsWordedAsEveryIntegerOption() async {
        let (code, streams) = await runTool(["benchmark", "--seed", "-3"])
        #expect(code == 2)
        #expect(streams.standardError == "ota: error: --seed '-3' is out of range, expected 0 or more (see 'ota benchmark --help')\n")
    }

    @Test func aDeviceFileIsNotARegularFile() async {
        let (code, streams) = await runTool(["update", "/dev/null", "--protocol", "generic"])
        #expect(code == 3)
        #expect(streams.standardError == "ota: error: /dev/null: is a device, not a regular file\n")
    }

    @Test func aFIFOIsNotARegularFile() async throws {
        let directory = Self.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("firmware.bin").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let (code, streams) = await runTool(["update", fifo, "--protocol", "generic"])
        #expect(code == 3)
        #expect(streams.standardError == "ota: error: \(fifo): is a FIFO, not a regular file\n")
    }

    @Test func aDirectoryWithoutManifestSaysAPackageNeedsOne() async throws {
        let directory = Self.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (code, streams) = await runTool(["update", directory.path, "--protocol", "generic"])
        #expect(code == 3)
        #expect(
            streams.standardError
                == "ota: error: \(directory.path): is a directory without manifest.json; a firmware package directory needs one (see docs/manifest.md)\n"
        )
    }

    // MARK: - Item 3: messages that say the wrong thing

    @Test func aMissingFileIsReportedBeforeTheMissingProtocol() async {
        let (code, streams) = await runTool(["update", "/nonexistent/nosuch.bin"])
        #expect(code == 3)
        #expect(streams.standardError == "ota: error: /nonexistent/nosuch.bin: no such file\n")
    }

    /// The device is called what the user called it, in progress and result alike.
    @Test func theDeviceHasOneNameThroughout() async throws {
        let image = try temporaryImage(size: 20_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:bolt-lock"])
        #expect(code == 0)
        #expect(streams.standardError.split(separator: "\n").first == "[0.0s] connecting: sim:bolt-lock")
        #expect(streams.standardOutput.hasPrefix("updated sim:bolt-lock with "))
        #expect(!streams.standardError.contains("esp32s3"))
    }

    @Test func abortSaysWhenThereWasNothingToAbort() async throws {
        let state = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let (code, streams) = await runTool(["abort", "--device", "sim:bolt-lock", "--sim-state", state.path])
        #expect(code == 0)
        #expect(streams.standardOutput == "nothing to abort on sim:bolt-lock: no update in progress (its status is idle)\n")

        let image = try temporaryImage(size: 20_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let update = await runTool(["update", image.path, "--device", "sim:bolt-lock", "--sim-state", state.path])
        #expect(update.code == 0)
        let installed = await runTool(["abort", "--device", "sim:bolt-lock", "--sim-state", state.path])
        #expect(installed.streams.standardOutput == "nothing to abort on sim:bolt-lock: no update in progress (its last update, 20000 bytes, is installed)\n")
    }

    @Test func abortSaysWhatItDiscarded() async throws {
        let image = try temporaryImage(size: 100_000)
        let state = Self.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: state)
        }
        _ = await runTool([
            "update", image.path, "--device", "sim:bolt-lock", "--sim-state", state.path, "--sim-disconnect-at", "60%", "--resume-attempts", "0",
        ])
        let (code, streams) = await runTool(["abort", "--device", "sim:bolt-lock", "--sim-state", state.path])
        #expect(code == 0)
        #expect(streams.standardOutput == "aborted the update in progress on sim:bolt-lock (it held 58020 of 100000 bytes)\n")
    }

    /// Generic has ABORT (03) but no reply and no status: the tool says it sent it, no more.
    @Test func genericAbortIsSentAndSaysWhatItCannotKnow() async {
        let (code, streams) = await runTool(["abort", "--protocol", "generic"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput == "sent ABORT to sim:esp32s3-mtu244-2m; generic devices do not say whether an update was in progress\n")
    }

    @Test func aProtocolWithoutAbortIsNamed() async {
        let (code, streams) = await runTool(["abort", "--device", "sim:nrf-tracker"])
        #expect(code == 2)
        #expect(streams.standardError == "ota: error: protocol 'nordic-dfu' has no abort command\n")
    }

    /// Status gives the offset the device recorded; in version 1, BEGIN records what it received
    /// since (version 2 drops bytes no batch check vouched for, so it continues where it recorded).
    @Test func aResumeSaysWhyItContinuesPastWhatTheDeviceHeld() async throws {
        let image = try temporaryImage(size: 200_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool([
            "update", image.path, "--device", "sim:bolt-lock", "--sim-disconnect-at", "50%", "--param", "version=1",
        ])
        #expect(code == 0)
        let lines = streams.standardError.split(separator: "\n").map(String.init)
        #expect(lines.contains("[4.8s] resuming: device holds 94400 of 200000 bytes of this image"))
        #expect(!lines.contains { $0.contains("device status before BEGIN") })
        #expect(
            lines.contains(
                "[4.8s] continuing at byte 96996 of 200000: the device had received 2596 bytes past the 94400 it had recorded, and recorded them at BEGIN"
            ))
    }

    /// A run that continues an earlier run's session is a resume, and its goodput counts only
    /// the bytes it sent.
    @Test func aRunContinuingAnEarlierSessionCountsAsAResumeWithHonestGoodput() async throws {
        let image = try temporaryImage(size: 100_000)
        let state = Self.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: state)
        }
        _ = await runTool(["update", image.path, "--protocol", "framed", "--sim-state", state.path, "--sim-disconnect-at", "60%", "--resume-attempts", "0"])
        let (code, streams) = await runTool(["update", image.path, "--protocol", "framed", "--sim-state", state.path, "--json"])
        #expect(code == 0)
        let result = try Self.json(try #require(streams.outputLines.last))
        #expect(result["resumes"] as? Int == 1)
        let goodput = try #require(result["goodput"] as? Double)
        // The link's modelled capacity on this profile (LE 2M, 244-byte writes) is about 70 kB/s.
        #expect(goodput < 70_000)
        #expect(goodput > 20_000)
        // The transfer's rate leaves the setup before the first data out, so it is higher, over
        // a shorter span (issue 18).
        let transferRate = try #require(result["transferRate"] as? Double)
        let transferDuration = try #require(result["transferDuration"] as? Double)
        #expect(transferRate >= goodput)
        #expect(transferRate < 70_000)
        #expect(transferDuration < (try #require(result["duration"] as? Double)))
    }

    // MARK: - Item 4: output

    /// One bar on screen at a time; none drawn again once the transfer is over.
    @Test func theBarGivesWayToLinesAndIsNotRedrawnAfterTheTransfer() async throws {
        let image = try temporaryImage(size: 200_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(
            ["update", image.path, "--device", "sim:bolt-lock", "--sim-disconnect-at", "50%", "--sim-speed", "max"], terminal: true)
        #expect(code == 0)
        let visible = Self.visibleLines(streams.standardError)
        // Every finished line is a state or note line: no bar was left behind.
        #expect(visible.dropLast().allSatisfy { !$0.contains("█") && !$0.contains("░") }, "\(visible)")
        #expect(visible.suffix(3) == ["› verifying", "› completed", ""])
    }

    @Test func eachRateSaysWhichItIs() async throws {
        let image = try temporaryImage(size: 200_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic"])
        #expect(code == 0)
        #expect(streams.standardError.split(separator: "\n").contains("[3.6s] 100%  200.0 kB / 200.0 kB  now 65.0 kB/s"))
        #expect(
            streams.standardOutput.hasSuffix(
                "over generic in 3.7 s; sent 200.0 kB, average 63.8 kB/s, transfer 64.4 kB/s (first data to the verdict, 3.1 s); ATT MTU 247, 244-byte chunks\n"
            ))
    }

    @Test func dryRunWithJSONPrintsOnePlanObject() async throws {
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:bolt-lock", "--dry-run", "--json"])
        #expect(code == 0)
        #expect(streams.outputLines.count == 1)
        let plan = try Self.json(try #require(streams.outputLines.first))
        #expect(plan["event"] as? String == "plan")
        #expect(plan["time"] as? Int == 0)
        #expect(plan["protocol"] as? String == "framed")
        #expect(plan["device"] as? String == "sim:bolt-lock")
        #expect((plan["images"] as? [[String: Any]])?.first?["size"] as? Int == 1000)
    }

    @Test func aRefusalBeforeConnectingStillEndsWithAResult() async {
        let (code, streams) = await runTool(["update", "/nonexistent/nosuch.bin", "--json"])
        #expect(code == 3)
        #expect(
            streams.standardOutput
                == #"{"code":"invalid-image","device":"sim:esp32s3-mtu244-2m","event":"result","message":"/nonexistent/nosuch.bin: no such file","status":"failed","time":0}"#
                + "\n")
        #expect(streams.standardError == "ota: error: /nonexistent/nosuch.bin: no such file\n")
    }

    @Test func theResultHasATimeAsEveryObjectDoes() async throws {
        let image = try temporaryImage(size: 20_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--json"])
        #expect(code == 0)
        let objects = try streams.outputLines.map(Self.json)
        #expect(objects.allSatisfy { $0["time"] is Double || $0["time"] is Int })
        let result = try #require(objects.last)
        #expect(result["event"] as? String == "result")
        #expect(result["time"] as? Double == result["duration"] as? Double)
    }

    /// A run of more than a minute keeps every column where the header put it.
    @Test func benchmarkColumnsStayPutForLongRuns() async throws {
        let (code, streams) = await runTool(["benchmark", "--protocol", "generic", "--profile", "esp32-mtu23-1m", "--size", "2M"])
        #expect(code == 0, "\(streams.standardError)")
        let lines = streams.outputLines
        let header = try #require(lines.first { $0.hasPrefix("protocol ") })
        let row = try #require(lines.last)
        #expect(
            row.hasPrefix(
                "generic           esp32-mtu23-1m       1M 30 ms 6/ev    23   20     501.0 s    4.0 kB/s    4.0 kB/s    99.8%   0.0%     2       "
            ))
        for column in ["virtual", "goodput", "notifs", "wall/MB", "CPU/MB"] {
            let start = try #require(header.range(of: column)).lowerBound.utf16Offset(in: header)
            let cellStart = row.index(row.startIndex, offsetBy: start)
            #expect(row[row.index(before: cellStart)] == " ", "\(column): \(row)")
            #expect(row[cellStart] != " ", "\(column): \(row)")
        }
    }
}
