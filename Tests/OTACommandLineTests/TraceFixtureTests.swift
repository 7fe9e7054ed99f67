import Foundation
import OTACore
import Testing

/// The recorded updates in `Fixtures/traces/` replay to their recorded outcome (docs/trace.md).
@Suite struct TraceFixtureTests {
    static func fixture(_ path: String) throws -> URL {
        try #require(Bundle.module.url(forResource: path, withExtension: nil, subdirectory: "Fixtures"), "missing fixture \(path)")
    }

    /// Recorded in the real-stack VM: `ota update nordic-app.zip --protocol nordic-dfu --max-chunk
    /// 244` over real BlueZ (kernel ATT, bluetoothd 5.66, AcquireWrite) against `ota-peripheral`'s
    /// Nordic bootloader model.
    @Test func theUpdateRecordedInTheVMReplaysToTheSameOutcomeAndWrites() async throws {
        let traceURL = try Self.fixture("traces/vm-nordic-app.jsonl")
        let trace = try Trace(contentsOf: traceURL)
        #expect(trace.header.protocolName == "nordic-dfu")
        #expect(trace.records.first { $0.op == .connected }?.link?.summary?.contains("BlueZ") == true)
        let package = try Self.fixture("app-unsigned.zip")
        let (code, streams) = await runTool(
            ["update", package.path, "--protocol", "nordic-dfu", "--max-chunk", "244", "--device", "replay:\(traceURL.path)"]
        )
        #expect(code == 0, "\(streams.standardError)")
        #expect(trace.result?.status == "completed")
        #expect(streams.standardOutput.contains("with app.bin (3072 bytes, CRC-32 0x7DB8FF88) over nordic-dfu"))
        // Every recorded write was made again, in order: the replay stops at the first that differs
        // and fails when any is left over (both checked by the exit status); count them as well.
        let writes = trace.records.filter { $0.op == .write }
        #expect(writes.count > 20)
        #expect(!streams.standardError.contains("differs from the recording"))
    }

    /// Recorded in the simulator: a generic update whose link is lost halfway, with no attempts
    /// left to restart.
    @Test func theRecordedFailureFailsTheSameWayAgain() async throws {
        let traceURL = try Self.fixture("traces/sim-generic-link-lost.jsonl")
        let trace = try Trace(contentsOf: traceURL)
        let recorded = try #require(trace.result)
        #expect(recorded.status == "failed")
        let image = try temporaryImage(size: 16_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(
            ["update", image.path, "--protocol", "generic", "--resume-attempts", "0", "--device", "replay:\(traceURL.path)"]
        )
        #expect(code == 5)
        #expect(streams.standardError.hasSuffix("ota: error: \(recorded.error?.message ?? "?")\n"))
        #expect(!streams.standardError.contains("differs from the recording"))
    }

    @Test func aReplayThatStopsShortOfTheRecordingFails() async throws {
        let traceURL = try Self.fixture("traces/sim-generic-link-lost.jsonl")
        let image = try temporaryImage(size: 16_000)
        defer { try? FileManager.default.removeItem(at: image) }
        // Cut the recording's first connection short of its end: the client, faithful to the
        // recording, reaches operations the recording lacks... or, truncated after a write, the
        // client's next write has nothing to match.
        let lines = String(decoding: try Data(contentsOf: traceURL), as: UTF8.self).split(separator: "\n")
        let cut = FileManager.default.temporaryDirectory.appendingPathComponent("ota-cut-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: cut) }
        try Data(lines.prefix(lines.count / 2).joined(separator: "\n").utf8).write(to: cut)
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--resume-attempts", "0", "--device", "replay:\(cut.path)"])
        #expect(code != 0)
        #expect(streams.standardError.contains("after the recording's last operation"), "\(streams.standardError)")
    }
}
