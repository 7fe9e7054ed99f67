import Foundation
import Testing

/// Generic cannot resume: after a lost link the engine starts it over from byte 0, and says so.
@Suite struct GenericRestartCommandTests {
    @Test func aLostLinkRestartsFromByteZeroAndCompletes() async throws {
        let image = try temporaryImage(size: 120_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool([
            "update", image.path, "--protocol", "generic", "--device", "sim:esp32s3-mtu244-2m", "--sim-disconnect-at", "50%",
        ])
        #expect(code == 0)
        #expect(streams.standardError.contains("link lost at byte "))
        #expect(streams.standardError.contains("; restarting from byte 0 in 500 ms (attempt 1 of 5)"))
        #expect(streams.standardOutput.contains(", 1 restart from byte 0;"))
    }

    @Test func withoutAttemptsALostLinkStillFails() async throws {
        let image = try temporaryImage(size: 120_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool([
            "update", image.path, "--protocol", "generic", "--device", "sim:esp32s3-mtu244-2m", "--sim-disconnect-at", "50%",
            "--resume-attempts", "0",
        ])
        #expect(code == 5)
        #expect(streams.standardError.contains("link lost"))
        #expect(!streams.standardError.contains("restarting"))
    }
}
