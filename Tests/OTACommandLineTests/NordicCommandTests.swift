import Foundation
import Testing

@Suite struct NordicCommandTests {
    private func fixture() throws -> URL {
        try #require(Bundle.module.url(forResource: "app-unsigned", withExtension: "zip", subdirectory: "Fixtures"))
    }

    @Test func updatesTheSimulatedBootloaderFromADFUPackage() async throws {
        let (code, streams) = await runTool(["update", try fixture().path, "--protocol", "nordic-dfu", "--device", "sim:nrf52840"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput.hasPrefix("updated sim:nrf52840-mtu244-2m with app.bin (3072 bytes"))
        #expect(streams.standardOutput.contains("over nordic-dfu"))
    }

    /// The Nordic table gives both bounds for both flows, and the round trip measured on the
    /// model: two 15 ms connection intervals on this profile (request in one event, answer in the
    /// next, the next request in the one after).
    @Test func theBenchmarkGivesTheIssuesBoundWithAMeasuredRoundTrip() async throws {
        let (code, streams) = await runTool(["benchmark", "--protocol", "nordic-dfu", "--profile", "nrf52840-mtu244-2m", "--size", "20K"])
        #expect(code == 0, "\(streams.standardError)")
        let lines = streams.standardOutput.split(separator: "\n").map(String.init)
        let header = try #require(lines.first { $0.hasPrefix("profile ") && $0.contains(" rt ") })
        let words = header.split(separator: " ", omittingEmptySubsequences: true)
        #expect(words.filter { $0 == "issue" }.count == 2)
        #expect(words.filter { $0 == "bound" }.count == 2)
        let row = try #require(lines.first { $0.hasPrefix("nrf52840-mtu244-2m ") })
        let cells = row.split(separator: " ", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        #expect(cells.count == 14, "\(row)")  // rates and times are a number and a unit
        #expect(row.contains(" 30 ms "))
        #expect(cells.filter { $0.hasSuffix("%") }.count == 4)
    }

    @Test func inspectShowsThePackageAndSaysItIsConsistent() async throws {
        let (code, streams) = await runTool(["inspect", try fixture().path])
        #expect(code == 0)
        #expect(streams.standardOutput.contains("hw_version:      52"))
        #expect(streams.standardOutput.contains("(byte-reversed SHA-256 of app.bin: matches)"))
        #expect(streams.standardOutput.hasSuffix("consistent: ready for --protocol nordic-dfu\n"))
    }

    @Test func aBrokenPackageIsRefusedBeforeConnecting() async throws {
        var bytes = try Data(contentsOf: try fixture())
        bytes[bytes.count / 2] ^= 0xFF  // corrupt the middle: an entry's CRC no longer matches
        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("broken-\(UUID().uuidString).zip")
        try bytes.write(to: broken)
        defer { try? FileManager.default.removeItem(at: broken) }
        let (code, streams) = await runTool(["update", broken.path, "--protocol", "nordic-dfu", "--device", "sim:nrf52840"])
        #expect(code == 3)
        #expect(streams.standardError.hasPrefix("ota: error: \(broken.lastPathComponent)"))
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
        #expect(!streams.standardError.contains("connecting"))
    }

    @Test func aProfileNamePrefixMustBeUnique() async throws {
        let (code, streams) = await runTool(["update", try fixture().path, "--protocol", "nordic-dfu", "--device", "sim:esp32"])
        #expect(code == 2)
        #expect(streams.standardError.contains("'esp32' could be sim:esp32-mtu23-1m or sim:esp32-mtu185-1m"))
    }
}
