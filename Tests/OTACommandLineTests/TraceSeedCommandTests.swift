import Foundation
import Testing

/// A trace records the seed of the update's random choices (a bootloader's name), so that its
/// replay makes the same ones.
@Suite struct TraceSeedCommandTests {
    @Test func theHeaderHoldsTheSeedTheUpdateUsedAndTheReplayFollowsIt() async throws {
        let image = try temporaryImage(size: 5_000)
        let trace = FileManager.default.temporaryDirectory.appendingPathComponent("ota-trace-\(UUID().uuidString).jsonl")
        defer { for url in [image, trace] { try? FileManager.default.removeItem(at: url) } }
        let (code, streams) = await runTool(["update", image.path, "--device", "sim:bolt-lock", "--seed", "7", "--trace", trace.path])
        #expect(code == 0, "\(streams.standardError)")
        let first = try #require(String(decoding: Data(contentsOf: trace), as: UTF8.self).split(separator: "\n").first)
        let line = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
        let header = try #require(line["header"] as? [String: Any])
        #expect(header["randomSeed"] as? Int == 7)
        let (replayed, replay) = await runTool(["update", image.path, "--device", "replay:\(trace.path)"])
        #expect(replayed == 0, "\(replay.standardError)")
    }
}
