import Foundation
import Testing

@testable import OTACommandLine

/// Decision 0056: argument text that Swift's `Character` reads differently from the bytes — fullwidth
/// digits, a combining mark after `=` — gets one line and exit 2, or the split the user meant.
@Suite struct HostileArgumentTextTests {
    @Test("fullwidth digits in an image hash are a usage error, not a crash", arguments: ["１２３４５６７８", "0x１２３４５６７８", "ａｂｃｄｅｆ１２", "1234５６７８"])
    func fullwidthHashDigits(text: String) async throws {
        #expect(throws: UsageError.self) { try HashArgument(text) }
        let (code, streams) = await runTool(["image", "test", text, "--device", "sim:zephyr-sensor"])
        #expect(code == 2)
        #expect(streams.standardError.hasPrefix("ota: error: '\(text)' is not an image hash"), "\(streams.standardError)")
        #expect(streams.standardError.split(separator: "\n").count == 1)
    }

    @Test("an ASCII hash still reads, with or without 0x, upper or lower case")
    func asciiHash() throws {
        #expect(try HashArgument("0xDEADbeef").bytes == Data([0xDE, 0xAD, 0xBE, 0xEF]))
        #expect(try HashArgument("0Xdeadbeef01").bytes == Data([0xDE, 0xAD, 0xBE, 0xEF, 0x01]))
        #expect(try HashArgument(String(repeating: "a5", count: 32)).isPrefix == false)
        #expect(throws: UsageError.self) { try HashArgument("deadbeeg") }
        #expect(throws: UsageError.self) { try HashArgument("dead beef") }
    }

    @Test("--name=value splits at the '=' even when a combining mark follows it")
    func combiningMarkAfterEquals() throws {
        let spec = CommandSpec(
            name: "update", summary: "test",
            options: [.init(name: "--protocol", valueName: "NAME", help: ""), .init(name: "--param", valueName: "KEY=VALUE", help: "", repeatable: true)],
            positionals: [])
        let parsed = try ArgumentParser.parse(["--protocol=\u{301}generic", "--param=window=\u{301}4"], for: spec)
        #expect(parsed.value("--protocol") == "\u{301}generic")
        #expect(parsed.values["--param"] == ["window=\u{301}4"])
        let parameters = try UpdatePlan.parameters(parsed, command: "update")
        #expect(parameters["window"] == "\u{301}4")
        #expect(ArgumentParser.splitAtEquals("=\u{301}").map { [$0.0, $0.1] } == ["", "\u{301}"])
        #expect(ArgumentParser.splitAtEquals("no-equals") == nil)
    }

    @Test("a combining mark after '=' in a real command is the option's bad value, one line")
    func combiningMarkAtTheTool() async {
        let (code, streams) = await runTool(["image", "erase", "--slot=\u{301}1", "--device", "sim:zephyr-sensor"])
        #expect(code == 2)
        #expect(streams.standardError.hasPrefix("ota: error: --slot '\u{301}1'"), "\(streams.standardError)")
        #expect(streams.standardError.split(separator: "\n").count == 1)
    }
}
