import Foundation
import OTATransportSimulator
import Testing

@testable import OTACommandLine

/// `ota benchmark --scale N`: N updates at once in one simulation, each flash checked.
@Suite struct BenchmarkScaleCommandTests {
    @Test func manyUpdatesAtOnceAllArriveByteIdentical() async throws {
        let (code, streams) = await runTool(["benchmark", "--scale", "25", "--protocol", "framed", "--profile", "esp32s3-mtu244-2m", "--size", "20K"])
        #expect(code == 0, "\(streams.standardError)")
        let rows = streams.standardOutput.split(separator: "\n").filter { $0.hasPrefix("framed") }
        #expect(rows.count == 2)  // version 2 and version 1
        #expect(rows.allSatisfy { $0.contains(" 25/25 ") })
        #expect(streams.standardOutput.contains("peak resident memory of the whole process:"))
    }

    @Test func jsonReportsEveryUpdateIdentical() async throws {
        let (code, streams) = await runTool(["benchmark", "--scale", "5", "--protocol", "generic", "--profile", "nrf52840-mtu244-2m", "--size", "5K", "--json"])
        #expect(code == 0, "\(streams.standardError)")
        let line = try #require(streams.standardOutput.split(separator: "\n").first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["updates"] as? Double == 5)
        #expect(object["identical"] as? Double == 5)
        #expect((object["peakResidentBytes"] as? Double ?? 0) > 0)
        #expect((object["cpuSecondsPerUpdate"] as? Double ?? 0) > 0)
    }

    @Test func throughOneAdapterTheLimitHoldsAndTheCampaignIsNearTheIdeal() async throws {
        let (code, streams) = await runTool([
            "benchmark", "--scale", "20", "--adapter-limit", "4", "--protocol", "generic", "--profile", "nrf52840-mtu244-2m", "--size", "64K", "--json",
        ])
        #expect(code == 0, "\(streams.standardError)")
        let line = try #require(streams.standardOutput.split(separator: "\n").first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["identical"] as? Double == 20)
        #expect(object["adapterLimit"] as? Double == 4)
        #expect(object["adapterPeakConnections"] as? Double == 4)
        let overIdeal = try #require(object["virtualOverIdeal"] as? Double)
        #expect(overIdeal >= 0.99 && overIdeal <= 1.25, "\(overIdeal)")
    }

    @Test func anAdapterLimitNeedsScale() async {
        let (code, streams) = await runTool(["benchmark", "--adapter-limit", "4"])
        #expect(code == 2)
        #expect(streams.standardError == "ota: error: --adapter-limit needs --scale N (see 'ota benchmark --help')\n")
    }

    @Test(arguments: ["0", "10001", "many"])
    func aScaleOutOfRangeIsAUsageError(value: String) async {
        let (code, streams) = await runTool(["benchmark", "--scale", value])
        #expect(code == 2)
        #expect(
            streams.standardError == "ota: error: --scale '\(value)' is not a number of updates between 1 and 10000 (see 'ota benchmark --help')\n"
        )
    }
}

/// `ota benchmark`'s table: the variant labels are known before the first row, so a long one
/// widens the first column instead of pushing its row's figures out of line.
@Suite struct BenchmarkTableTests {
    @Test func longVariantLabelsKeepEveryColumnAligned() async throws {
        let (code, streams) = await runTool(["benchmark", "--protocol", "mcumgr", "--profile", "nrf52840-mtu244-2m", "--size", "5K"])
        #expect(code == 0, "\(streams.standardError)")
        let lines = streams.standardOutput.split(separator: "\n").map(String.init)
        let header = try #require(lines.first { $0.hasPrefix("protocol ") })
        let rows = lines.filter { $0.hasPrefix("mcumgr ") }
        #expect(rows.count == 6)
        #expect(rows.contains { $0.count(where: { $0 == "=" }) >= 5 }, "the longest labels are measured")
        // Every row's profile, and its last column, start where the header's do.
        let profileColumn = try #require(header.range(of: "profile")).lowerBound.utf16Offset(in: header)
        let lastColumn = try #require(header.range(of: "CPU/MB")).lowerBound.utf16Offset(in: header)
        for row in rows {
            let profile = try #require(row.range(of: "nrf52840-mtu244-2m")).lowerBound.utf16Offset(in: row)
            #expect(profile == profileColumn, "\(row)")
            let lastCell = try #require(row.range(of: " ", options: .backwards)).lowerBound.utf16Offset(in: row)
            let cpuCellStart = try #require(row[..<row.index(row.startIndex, offsetBy: lastCell)].range(of: " ", options: .backwards)).upperBound
                .utf16Offset(in: row)
            #expect(cpuCellStart == lastColumn, "\(row)")
        }
    }
}

/// `ota benchmark --param`: one protocol measured once, its first stock variant with the given
/// parameters changed; anything else is one usage line.
@Suite struct BenchmarkParameterTests {
    @Test func theGivenParametersReplaceTheStockVariants() async throws {
        let (code, streams) = await runTool([
            "benchmark", "--protocol", "mcumgr", "--param", "buffer-size=2475", "--param", "window=4", "--profile", "esp32s3-mtu244-2m", "--size", "20K",
            "--json",
        ])
        #expect(code == 0, "\(streams.standardError)")
        let lines = streams.standardOutput.split(separator: "\n")
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        // mode=upload comes from the first stock variant; the rest from --param.
        #expect(object["variant"] as? String == "mcumgr buffer-size=2475 mode=upload window=4")
        #expect((object["goodput"] as? Double ?? 0) > 0)
    }

    @Test func withScaleTooOnlyTheGivenVariantRuns() async throws {
        let (code, streams) = await runTool([
            "benchmark", "--scale", "3", "--protocol", "framed", "--param", "version=1", "--profile", "esp32s3-mtu244-2m", "--size", "5K", "--json",
        ])
        #expect(code == 0, "\(streams.standardError)")
        let lines = streams.standardOutput.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.contains("version=1") == true)
        #expect(lines.first?.contains("\"identical\":3") == true)
    }

    @Test(arguments: [
        (["--param", "window=4"], "--param needs exactly one --protocol: parameters belong to one protocol"),
        (["--protocol", "mcumgr", "--protocol", "generic", "--param", "window=4"], "--param needs exactly one --protocol: parameters belong to one protocol"),
        (["--protocol", "mcumgr", "--param", "windw=4"], "protocol 'mcumgr' has no parameter 'windw'"),
        (["--protocol", "mcumgr", "--param", "window=zero"], "parameter 'window': 'zero' is not an integer"),
        (["--protocol", "mcumgr", "--param", "window"], "--param 'window' is not KEY=VALUE"),
    ])
    func badParametersAreOneUsageLine(extra: [String], message: String) async {
        let (code, streams) = await runTool(["benchmark"] + extra)
        #expect(code == 2)
        #expect(streams.standardError.hasPrefix("ota: error: \(message)"), "\(streams.standardError)")
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
        #expect(streams.standardOutput.isEmpty)
    }
}

/// `ota benchmark` with an image some or all of the selected profiles' slots cannot hold.
@Suite struct BenchmarkSlotTests {
    /// A row whose slot is too small is reported in `--json` too (a reader of the lines sees every
    /// combination it asked for), and the rows that fit are measured.
    @Test(arguments: [[], ["--scale", "2"]])
    func jsonReportsTheSkippedRow(extra: [String]) async throws {
        // nrf52840's slot is 1 MiB, esp32s3's 12 MiB.
        let (code, streams) = await runTool(
            ["benchmark", "--protocol", "generic", "--profile", "nrf52840-mtu244-2m", "--profile", "esp32s3-mtu244-2m", "--size", "1100K", "--json"]
                + extra)
        #expect(code == 0, "\(streams.standardError)")
        let lines = streams.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        let skipped = try #require(lines.first { $0.contains("nrf52840-mtu244-2m") })
        #expect(skipped.contains(#""skipped":"image larger than the slot""#))
        #expect(skipped.contains(#""slotSize":1048576"#))
        #expect(skipped.contains(#""imageSize":1100000"#))
        let measured = try #require(lines.first { $0.contains("esp32s3-mtu244-2m") })
        #expect(!measured.contains("skipped"))
    }

    /// When no selected profile can hold the image there is nothing to measure: one usage line,
    /// exit 2, not an empty report that looks like success.
    @Test(arguments: [[], ["--json"], ["--scale", "2"]])
    func anImageNoSlotHoldsIsOneUsageLine(extra: [String]) async {
        let (code, streams) = await runTool(["benchmark", "--protocol", "generic", "--profile", "esp32s3-mtu244-2m", "--size", "16M"] + extra)
        #expect(code == 2)
        #expect(
            streams.standardError
                == "ota: error: --size 16M (16000000 bytes) does not fit esp32s3-mtu244-2m's slot, which holds 12582912 bytes (see 'ota benchmark --help')\n"
        )
        #expect(streams.standardOutput.isEmpty)
    }
}

/// The benchmark's image: the same bytes from the same seed, eight per SplitMix64 draw, at any
/// length (a tail shorter than eight bytes included).
@Suite struct BenchmarkImageTests {
    @Test(arguments: [0, 1, 7, 8, 9, 4099])
    func bytesComeFromTheSeedEightPerDraw(count: Int) {
        let bytes = BenchmarkCommand.pseudoRandomBytes(count, seed: 1)
        #expect(bytes.count == count)
        #expect(bytes == BenchmarkCommand.pseudoRandomBytes(count, seed: 1))
        // Drawn here one byte at a time from the same generator, least significant byte first.
        var random = SeededRandom(seed: 1 ^ 0x5EED)
        var expected = [UInt8]()
        while expected.count < count {
            var draw = random.next()
            for _ in 0..<8 where expected.count < count {
                expected.append(UInt8(truncatingIfNeeded: draw))
                draw >>= 8
            }
        }
        #expect([UInt8](bytes) == expected)
        if count >= 8 { #expect(bytes != BenchmarkCommand.pseudoRandomBytes(count, seed: 2)) }
    }
}
