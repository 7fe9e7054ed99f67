import Foundation
import Testing

@testable import OTACommandLine

/// Every command in the README and `docs/cli.md` runs as written: each ```sh block's lines that
/// start with `swift run ota` (or `swift run -c release ota`) run here in-process through
/// ``CommandLineTool/run(_:streams:environment:)`` against the simulator, in order, and end with
/// exit 0 or the code a trailing `# exit N` states. A block runs as a unit, so a later line may rely
/// on an earlier one (`--sim-state`). Lines that cannot run here are listed in ``notRunHere`` with
/// why; any other line fails the test, so a new command in the docs is either run or explained.
@Suite struct DocumentedCommandsTests {
    static let documents = ["README.md", "docs/cli.md"]

    /// Lines that do not run in-process, and what runs them instead.
    static let notRunHere: [String: String] = [
        "swift test": "the test command itself; .ci/run runs it verbatim",
        "Tests/RealStack/run-tests.sh": "needs root, QEMU and a VM; .ci/run runs it",
        "swift run ota doctor": "examines this machine's BlueZ; its output and exit code depend on the machine (DoctorCommand tests cover it)",
        "swift run ota scan --bluez --duration 10": "listens to a real Bluetooth adapter",
        "swift run ota update Examples/firmware/sample-app.bin --protocol generic --device AA:BB:CC:DD:EE:FF --adapter hci0":
            "needs a real device at that address; Tests/RealStack runs the same command against ota-peripheral",
        "swift run ota abort --protocol framed --device AA:BB:CC:DD:EE:FF": "needs a real device at that address",
        "swift run ota-peripheral --protocol mcumgr --smp-udp 1337":
            "serves until it is signalled; Tests/ThirdParty/smp-udp.sh runs it, and ImageCommandTests serve the same model over UDP in-process",
        "swift run ota image list --device udp:127.0.0.1": "needs the server of the line before (ImageCommandTests.overUDP runs the same)",
        "swift run ota update Tests/OTAProtocolMCUmgrTests/Fixtures/ecdsa-p256-4KB.bin --device udp:127.0.0.1:1337":
            "needs the server above (ImageCommandTests.overUDP runs the same)",
    ]

    /// The ```sh blocks under a "## Installing" heading: a release build and files written outside
    /// the package, which .ci/check-install.sh runs verbatim.
    static let installingSection = "## Installing"

    struct Block: Sendable, CustomTestStringConvertible {
        var document: String
        var firstLine: Int
        var lines: [String]
        var section: String
        var testDescription: String { "\(document):\(firstLine)" }
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The ```sh blocks of `document`, each with its lines (comment-only and empty lines dropped).
    static func blocks(of document: String) -> [Block] {
        guard let text = try? String(contentsOf: packageRoot.appendingPathComponent(document), encoding: .utf8) else { return [] }
        var blocks: [Block] = []
        var current: Block?
        var section = ""
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if current == nil, line.hasPrefix("## ") { section = String(line) }
            if line == "```sh" {
                current = Block(document: document, firstLine: index + 2, lines: [], section: section)
            } else if line.hasPrefix("```"), let block = current {
                blocks.append(block)
                current = nil
            } else if current != nil {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if !trimmed.isEmpty, !trimmed.hasPrefix("#") { current?.lines.append(trimmed) }
            }
        }
        return blocks
    }

    static let allBlocks = documents.flatMap(blocks(of:))

    @Test func theDocumentsHaveCommandBlocks() {
        for document in Self.documents {
            #expect(Self.blocks(of: document).count >= 2, "\(document): no ```sh blocks found")
        }
        let lines = Set(Self.allBlocks.flatMap(\.lines).map { Self.command(in: $0) })
        for skipped in Self.notRunHere.keys {
            #expect(lines.contains(skipped), "notRunHere lists '\(skipped)', which no document has any more")
        }
    }

    @Test(arguments: allBlocks)
    func everyCommandRunsAsWritten(block: Block) async throws {
        if block.section == Self.installingSection {
            let script = try String(contentsOf: Self.packageRoot.appendingPathComponent(".ci/check-install.sh"), encoding: .utf8)
            #expect(script.contains("\"\(Self.installingSection)\""), ".ci/check-install.sh does not run the \(Self.installingSection) blocks")
            return
        }
        for line in block.lines {
            let command = Self.command(in: line)
            if Self.notRunHere[command] != nil { continue }
            if command.hasPrefix("rm -rf /tmp/") {
                try? FileManager.default.removeItem(atPath: String(command.dropFirst("rm -rf ".count)))
                continue
            }
            let words = try #require(Self.words(command), "\(block.testDescription): cannot split '\(line)'")
            guard let arguments = Self.otaArguments(words) else {
                Issue.record("\(block.testDescription): '\(line)' is not a 'swift run ota' command; run it here or list it in notRunHere with why")
                continue
            }
            let streams = CapturedStreams()
            let code = await CommandLineTool.run(arguments.map(Self.resolved), streams: streams, environment: .standard)
            let expected = Self.statedExitCode(line) ?? 0
            #expect(code == expected, "\(block.testDescription): '\(line)' exited \(code), not \(expected): \(streams.standardError)")
            if expected == 0 { #expect(!streams.standardOutput.isEmpty, "\(block.testDescription): '\(line)' printed nothing") }
        }
    }

    /// The line without its trailing comment.
    static func command(in line: String) -> String {
        guard let range = line.range(of: " #") else { return line }
        return String(line[..<range.lowerBound]).trimmingCharacters(in: .whitespaces)
    }

    /// `# exit N` in the line's comment.
    static func statedExitCode(_ line: String) -> Int32? {
        guard let range = line.range(of: #"# exit (\d+)"#, options: .regularExpression) else { return nil }
        return Int32(line[range].dropFirst("# exit ".count))
    }

    /// The arguments after `swift run [-c release] ota`, or nil for another command.
    static func otaArguments(_ words: [String]) -> [String]? {
        var rest = words[...]
        guard rest.popFirst() == "swift", rest.popFirst() == "run" else { return nil }
        if rest.first == "-c" { rest = rest.dropFirst(2) }
        guard rest.popFirst() == "ota" else { return nil }
        return Array(rest)
    }

    /// A documented relative path, taken from the package directory (where the docs run them),
    /// whatever this test's working directory.
    static func resolved(_ argument: String) -> String {
        guard !argument.hasPrefix("-"), !argument.hasPrefix("/"), argument.contains("/") else { return argument }
        let url = packageRoot.appendingPathComponent(argument)
        return FileManager.default.fileExists(atPath: url.path) ? url.path : argument
    }

    /// The words of a shell command line, with '…' and "…" quoting; nil when the line needs a
    /// shell (pipes, redirections, substitutions, several commands).
    static func words(_ line: String) -> [String]? {
        var words: [String] = []
        var word: String?
        var quote: Character?
        for character in line {
            if let open = quote {
                if character == open { quote = nil } else { word?.append(character) }
                continue
            }
            switch character {
            case "'", "\"":
                quote = character
                word = word ?? ""
            case " ", "\t":
                if let finished = word { words.append(finished) }
                word = nil
            case "|", ">", "<", ";", "&", "$", "`", "(", ")", "*", "?", "~":
                return nil
            default:
                word = (word ?? "") + String(character)
            }
        }
        if quote != nil { return nil }
        if let word { words.append(word) }
        return words
    }

    // MARK: the synopsis of docs/cli.md against the specs

    /// Each command's synopsis in `docs/cli.md` lists exactly its options, value names and
    /// positionals as `--help` prints them, `…` marking the repeatable ones.
    @Test(arguments: CommandLineTool.commands.map { $0.spec.name })
    func cliSynopsisMatchesTheHelpOf(command: String) throws {
        let spec = try #require(CommandLineTool.commands.first { $0.spec.name == command }?.spec)
        let text = try String(contentsOf: Self.packageRoot.appendingPathComponent("docs/cli.md"), encoding: .utf8)
        let synopsis = try #require(text.components(separatedBy: "```text\n").dropFirst().first?.components(separatedBy: "```").first)
        var entry: [Substring] = []
        for line in synopsis.split(separator: "\n") {
            if line.hasPrefix("ota \(command) ") || line == "ota \(command)" {
                entry = [line]
            } else if !entry.isEmpty, line.hasPrefix(" ") {
                entry.append(line)
            } else if !entry.isEmpty {
                break
            }
        }
        try #require(!entry.isEmpty, "docs/cli.md's synopsis has no 'ota \(command)'")
        let joined = entry.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        let documented = joined.matches(of: /\[(--[a-z-]+)( [^\]]+)?\](…)?/).map { match in
            "\(match.1)\(match.2 ?? "")\(match.3 == nil ? "" : "…")"
        }
        let specified = spec.options.map { "\($0.name)\($0.valueName.map { " \($0)" } ?? "")\($0.repeatable ? "…" : "")" }
        #expect(documented == specified, "docs/cli.md: 'ota \(command)' options differ from its --help")
        let positionals = joined.split(separator: " ").dropFirst(2).prefix { !$0.hasPrefix("[--") }.map(String.init)
        #expect(positionals == spec.positionals.map { $0.isOptional ? "[\($0.name)]" : $0.name })
    }
}
