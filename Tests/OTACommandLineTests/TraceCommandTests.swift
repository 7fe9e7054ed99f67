import Foundation
import OTACore
import Testing

/// `ota update --trace FILE` records an update; `--device replay:FILE` plays it again.
@Suite struct TraceCommandTests {
    func temporaryTrace() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("ota-trace-\(UUID().uuidString).jsonl")
    }

    func records(_ url: URL) throws -> [[String: Any]] {
        try String(decoding: Data(contentsOf: url), as: UTF8.self).split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    /// The result line without the device address, which differs between a recording and its
    /// replay.
    func outcome(_ output: String) -> String {
        output.replacingOccurrences(of: #"^updated \S+ "#, with: "updated DEVICE ", options: .regularExpression)
    }

    @Test func aTraceHoldsEveryOperationAndKeepsNoImageBytesByDefault() async throws {
        let image = try temporaryImage(size: 30_000)
        let trace = temporaryTrace()
        defer { for url in [image, trace] { try? FileManager.default.removeItem(at: url) } }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:bolt-lock", "--trace", trace.path])
        #expect(code == 0, "\(streams.standardError)")
        let lines = try records(trace)
        let header = try #require(lines.first?["header"] as? [String: Any])
        #expect(header["protocol"] as? String == "framed")
        #expect(header["format"] as? Int == 1)
        #expect((header["command"] as? String)?.hasPrefix("ota update ") == true)
        let ops = lines.compactMap { $0["op"] as? String }
        #expect(ops.first == "header")
        #expect(ops.dropFirst().first == "connect")
        #expect(ops.contains("subscribe") && ops.contains("notify") && ops.contains("read"))
        #expect(ops.last == "result")
        let commands = lines.filter { $0["op"] as? String == "write" && $0["kind"] as? String == "command" }
        #expect(commands.count > 100)
        #expect(commands.allSatisfy { $0["data"] == nil && $0["len"] is Int && $0["crc32"] is String })
        #expect(commands.reduce(0) { $0 + ($1["len"] as? Int ?? 0) } > 30_000)
        let requests = lines.filter { $0["op"] as? String == "write" && $0["kind"] as? String == "request" }
        #expect(!requests.isEmpty && requests.allSatisfy { $0["data"] is String })
        // Every operation has its result.
        let begun = Set(
            lines.filter { ["connect", "subscribe", "write", "read", "disconnect"].contains($0["op"] as? String) }.compactMap { $0["seq"] as? Int })
        let ended = Set(lines.filter { ["done", "failed", "connected"].contains($0["op"] as? String) }.compactMap { $0["seq"] as? Int })
        #expect(begun == ended)
    }

    @Test func traceDataKeepsTheChunksBytes() async throws {
        let image = try temporaryImage(size: 5_000)
        let trace = temporaryTrace()
        defer { for url in [image, trace] { try? FileManager.default.removeItem(at: url) } }
        let (code, _) = await runTool(["update", image.path, "--protocol", "generic", "--trace", trace.path, "--trace-data"])
        #expect(code == 0)
        let commands = try records(trace).filter { $0["op"] as? String == "write" && $0["kind"] as? String == "command" }
        let bytes = commands.compactMap { $0["data"] as? String }.compactMap(Hex.decode).flatMap { $0 }
        #expect(Data(bytes) == (try Data(contentsOf: image)))
    }

    @Test(arguments: [
        ["--device", "sim:bolt-lock", "--sim-disconnect-at", "50%"],
        ["--protocol", "generic", "--device", "sim:esp32-mtu185-1m", "--sim-disconnect-at", "40%"],
        ["--device", "sim:bolt-lock", "--max-chunk", "100", "--sim-reboot-at", "30%"],
    ])
    func aReplayReproducesTheRecordedUpdate(options: [String]) async throws {
        let image = try temporaryImage(size: 40_000)
        let trace = temporaryTrace()
        defer { for url in [image, trace] { try? FileManager.default.removeItem(at: url) } }
        let (code, recorded) = await runTool(["update", image.path, "--trace", trace.path] + options)
        #expect(code == 0, "\(recorded.standardError)")
        let replayOptions = options.filter { !$0.hasPrefix("--sim") && !$0.hasPrefix("sim:") && !$0.hasSuffix("%") && $0 != "--device" }
        let (replayCode, replayed) = await runTool(["update", image.path, "--device", "replay:\(trace.path)"] + replayOptions)
        #expect(replayCode == code, "\(replayed.standardError)")
        #expect(outcome(replayed.standardOutput) == outcome(recorded.standardOutput))
        // The same progress, line for line, but for the device's name.
        let progress = { (text: String) in text.split(separator: "\n").filter { !$0.contains("connecting") } }
        #expect(progress(replayed.standardError) == progress(recorded.standardError))
    }

    @Test func aReplayOfAFailureFailsTheSameWay() async throws {
        let image = try temporaryImage(size: 16_000)
        let trace = temporaryTrace()
        defer { for url in [image, trace] { try? FileManager.default.removeItem(at: url) } }
        let options = ["--protocol", "generic", "--resume-attempts", "0"]
        let (code, recorded) = await runTool(["update", image.path, "--trace", trace.path, "--sim-disconnect-at", "50%"] + options)
        #expect(code == 5)
        let (replayCode, replayed) = await runTool(["update", image.path, "--device", "replay:\(trace.path)"] + options)
        #expect(replayCode == 5)
        let lastLine = { (text: String) in text.split(separator: "\n").last.map(String.init) }
        #expect(lastLine(replayed.standardError) == lastLine(recorded.standardError))
        let result = try #require(try records(trace).last)
        #expect(result["status"] as? String == "failed")
        #expect((result["error"] as? [String: Any])?["kind"] as? String == "disconnected")
    }

    @Test func aClientThatDoesSomethingElseIsCaughtAtTheLineItDiffers() async throws {
        let image = try temporaryImage(size: 20_000)
        let trace = temporaryTrace()
        defer { for url in [image, trace] { try? FileManager.default.removeItem(at: url) } }
        _ = await runTool(["update", image.path, "--protocol", "generic", "--trace", trace.path])
        // Another chunk size: the first data write differs.
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "replay:\(trace.path)", "--max-chunk", "100"])
        #expect(code != 0)
        #expect(streams.standardError.contains("diverged: line "))
        #expect(streams.standardError.contains("write without response of 100 bytes"))
        // Other firmware: refused before connecting, in one line.
        let other = try temporaryImage(size: 20_001)
        defer { try? FileManager.default.removeItem(at: other) }
        let (otherCode, otherStreams) = await runTool(["update", other.path, "--protocol", "generic", "--device", "replay:\(trace.path)"])
        #expect(otherCode == 3)
        #expect(otherStreams.standardError.split(separator: "\n").count == 1)
        #expect(otherStreams.standardError.contains("replay it with the same firmware"))
    }

    @Test func aDeviceThatAnswersOtherwiseThanRecordedChangesTheOutcome() async throws {
        let image = try temporaryImage(size: 20_000)
        let trace = temporaryTrace()
        defer { for url in [image, trace] { try? FileManager.default.removeItem(at: url) } }
        _ = await runTool(["update", image.path, "--protocol", "generic", "--trace", trace.path])
        // The device's answer to COMMIT, edited: a CRC mismatch instead of success.
        var text = String(decoding: try Data(contentsOf: trace), as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let lastNotify = try #require(lines.lastIndex { $0.contains(#""op":"notify""#) })
        let edited = lines[lastNotify].replacingOccurrences(of: #""data":"[0-9a-f]+""#, with: #""data":"03""#, options: .regularExpression)
        text = (lines[..<lastNotify] + [edited] + lines[(lastNotify + 1)...]).joined(separator: "\n")
        try Data(text.utf8).write(to: trace)
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "replay:\(trace.path)"])
        #expect(code != 0)
        #expect(!streams.standardOutput.hasPrefix("updated"))
    }

    @Test(arguments: [
        ("", "empty"),
        ("not json\n", "line 1: not a trace record (not JSON)"),
        (#"{"op":"connect","seq":1,"t":0}"#, "line 1: the first record must be the header"),
        (Self.header + "\n" + #"{"op":"write","seq":1,"t":0,"svc":"180f","char":"2a19","kind":"command","len":1}"#, "line 2: a write without len and crc32"),
        (Self.header + "\n" + #"{"op":"notify","t":0,"svc":"180f","char":"2a19","data":"0g"}"#, "line 2: data that is not hexadecimal"),
        (Self.header + "\n" + #"{"op":"read","seq":1,"t":-1,"svc":"180f","char":"2a19"}"#, "line 2: a time of -1"),
        (Self.header + "\n" + #"{"op":"launch","t":0}"#, "line 2: not a trace record"),
        (Self.header + "\n" + Self.header, "line 2: a second header"),
        (#"{"op":"header","t":0,"header":{"format":2,"command":"","device":"","protocol":"generic","images":[],"keepsData":false}}"#, "format 2"),
    ])
    func aMalformedTraceGetsOneLineNamingTheLine(content: String, expected: String) async throws {
        let trace = temporaryTrace()
        let image = try temporaryImage(size: 100)
        defer { for url in [image, trace] { try? FileManager.default.removeItem(at: url) } }
        try Data(content.utf8).write(to: trace)
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "replay:\(trace.path)"])
        #expect(code != 0 && code != 70)
        #expect(streams.standardError.contains(expected), "\(streams.standardError)")
        #expect(streams.standardError.split(separator: "\n").count == 1)
    }

    static let header =
        #"{"op":"header","t":0,"header":{"format":1,"command":"ota update x","device":"sim:x","protocol":"generic","images":[{"name":"x","size":100,"crc32":"0x00000000"}],"keepsData":false}}"#

    @Test func anUnwritableTraceIsRefusedBeforeConnecting() async throws {
        let image = try temporaryImage(size: 100)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--trace", "/nonexistent-dir/t.jsonl"])
        #expect(code != 0)
        #expect(streams.standardError.contains("cannot create the trace file"))
        #expect(!streams.standardError.contains("connecting"))
    }
}
