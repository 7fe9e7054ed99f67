import Foundation
import Testing

@Suite struct FramedCommandTests {
    @Test func resumeIsVisibleInTheProgressOutput() async throws {
        let image = try temporaryImage(size: 120_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool([
            "update", image.path, "--protocol", "framed", "--device", "sim:nrf52840-mtu244-2m",
            "--sim-disconnect-at", "40%", "--sim-reboot-at", "80000",
        ])
        #expect(code == 0)
        #expect(streams.standardError.contains("paused: "))
        #expect(streams.standardError.contains("reconnecting in 500 ms (attempt 1 of 5)"))
        #expect(streams.standardError.contains("resuming: device holds"))
        #expect(streams.standardOutput.contains(", 2 resumes;"))
    }

    @Test func aSecondRunContinuesFromTheSavedDevice() async throws {
        let image = try temporaryImage(size: 150_000)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("ota-sim-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: state)
        }
        let first = await runTool([
            "update", image.path, "--protocol", "framed", "--sim-state", state.path, "--sim-disconnect-at", "50%", "--resume-attempts", "0",
        ])
        #expect(first.code == 5)
        #expect(first.streams.standardError.contains("link lost"))
        let second = await runTool(["update", image.path, "--protocol", "framed", "--sim-state", state.path, "--json"])
        #expect(second.code == 0)
        let result = try #require(second.streams.outputLines.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.utf8)) as? [String: Any])
        #expect(object["status"] as? String == "completed")
        #expect((object["bytesSent"] as? Int ?? .max) < 80_000)
    }

    @Test func abortMakesTheNextRunStartOver() async throws {
        let image = try temporaryImage(size: 100_000)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("ota-sim-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: state)
        }
        _ = await runTool(["update", image.path, "--protocol", "framed", "--sim-state", state.path, "--sim-disconnect-at", "60%", "--resume-attempts", "0"])
        let abort = await runTool(["abort", "--protocol", "framed", "--sim-state", state.path])
        #expect(abort.code == 0)
        #expect(abort.streams.standardOutput == "aborted the update in progress on sim:esp32s3-mtu244-2m (it held 58020 of 100000 bytes)\n")
        let again = await runTool(["update", image.path, "--protocol", "framed", "--sim-state", state.path, "--json"])
        #expect(again.code == 0)
        let result = try #require(again.streams.outputLines.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.utf8)) as? [String: Any])
        #expect((object["bytesSent"] as? Int ?? 0) >= 100_000)
    }

    @Test(arguments: [
        (["update", "IMAGE", "--protocol", "framed", "--sim-disconnect-at", "120%"], "--sim-disconnect-at '120%' is not a byte count or a percentage"),
        (["update", "IMAGE", "--protocol", "framed", "--resume-attempts", "-1"], "--resume-attempts '-1' is out of range, expected 0...100"),
        (["update", "IMAGE", "--protocol", "framed", "--param", "window=1"], "parameter 'window': '1' is out of range, expected 2...64"),
        (["abort"], "no protocol given: pass --protocol NAME"),
        (["abort", "--protocol", "generic", "--device", "sim:nope"], "no simulated device or profile 'nope'"),
    ])
    func badSimulatorOptionsAreUsageErrors(arguments: [String], fragment: String) async throws {
        let image = try temporaryImage(size: 100)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(arguments.map { $0 == "IMAGE" ? image.path : $0 })
        #expect(code == 2)
        #expect(streams.standardError.contains(fragment))
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
    }
}
