import Testing

@testable import OTACommandLine

@Suite struct ArgumentParserTests {
    private let spec = CommandSpec(
        name: "update",
        summary: "test",
        options: [
            .init(name: "--protocol", valueName: "NAME", help: ""),
            .init(name: "--param", valueName: "KEY=VALUE", help: "", repeatable: true),
            .init(name: "--json", help: ""),
        ],
        positionals: [.init(name: "FIRMWARE", help: "")]
    )

    @Test func valuesFlagsAndPositionals() throws {
        let parsed = try ArgumentParser.parse(["fw.bin", "--protocol", "generic", "--json", "--param=a=1", "--param", "b=2"], for: spec)
        #expect(parsed.positionals == ["fw.bin"])
        #expect(parsed.value("--protocol") == "generic")
        #expect(parsed.flag("--json"))
        #expect(parsed.values["--param"] == ["a=1", "b=2"])
    }

    @Test func doubleDashEndsOptions() throws {
        let parsed = try ArgumentParser.parse(["--", "--weird-name.bin"], for: spec)
        #expect(parsed.positionals == ["--weird-name.bin"])
    }

    @Test func helpWinsOverMissingArguments() throws {
        #expect(try ArgumentParser.parse(["-h"], for: spec).wantsHelp)
    }

    @Test(arguments: [
        (["fw.bin", "--nope"], "unknown option '--nope' for 'ota update'"),
        (["fw.bin", "--protocol"], "option '--protocol' needs a value (--protocol NAME)"),
        (["fw.bin", "--protocol", "--json"], "option '--protocol' needs a value (--protocol NAME)"),
        (["fw.bin", "--json=yes"], "option '--json' takes no value"),
        (["fw.bin", "--protocol", "a", "--protocol", "b"], "option '--protocol' given twice"),
        (["a.bin", "b.bin"], "unexpected argument 'b.bin' for 'ota update'"),
        ([], "missing FIRMWARE for 'ota update'"),
    ])
    func errorsAreOneLineWithAHint(arguments: [String], message: String) {
        #expect(throws: UsageError(message, command: "update")) {
            try ArgumentParser.parse(arguments, for: spec)
        }
    }
}
