import Foundation
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTACommandLine

/// `ota completion bash|zsh`: scripts generated from the command specifications, that the shells
/// accept and that complete what `--help` lists.
@Suite struct CompletionCommandTests {
    static let specs = CommandLineTool.commands.map { $0.spec }

    static func script(_ shell: String) async throws -> String {
        let (code, streams) = await runTool(["completion", shell])
        try #require(code == 0, "\(streams.standardError)")
        #expect(streams.standardError.isEmpty)
        return streams.standardOutput
    }

    @Test(arguments: ["bash", "zsh"])
    func scriptNamesEveryCommandAndEveryOptionOfTheSpecs(shell: String) async throws {
        let script = try await Self.script(shell)
        let completion = ShellCompletion(commands: Self.specs, environment: .standard)
        for spec in Self.specs {
            let section = try #require(Self.section(of: spec.name, in: script), "\(shell): no section for '\(spec.name)'")
            for option in spec.options {
                #expect(section.contains(option.name), "\(shell): '\(spec.name)' lacks \(option.name)")
                if case .words(let words) = completion.values(of: option, in: spec) {
                    for word in words {
                        let written = shell == "zsh" ? word.replacingOccurrences(of: ":", with: "\\:") : word
                        #expect(section.contains(written), "\(shell): '\(spec.name) \(option.name)' lacks value \(word)")
                    }
                }
            }
        }
    }

    /// The text from a command's `case` label to the next one.
    static func section(of command: String, in script: String) -> String? {
        guard let start = script.range(of: #"\n +"# + command + #"\)\n"#, options: .regularExpression) else { return nil }
        let rest = script[start.upperBound...]
        let end = rest.range(of: #"\n +[a-z-]+\)\n"#, options: .regularExpression)?.lowerBound ?? rest.endIndex
        return String(rest[..<end])
    }

    @Test func enumerableValuesComeFromTheRegistryTheFleetAndTheProfiles() throws {
        let completion = ShellCompletion(commands: Self.specs, environment: .standard)
        let update = try #require(Self.specs.first { $0.name == "update" })
        func values(_ name: String) throws -> ShellCompletion.Values {
            completion.values(of: try #require(update.options.first { $0.name == name }), in: update)
        }
        #expect(try values("--protocol") == .words(ToolEnvironment.standard.registry.all.map(\.name)))
        #expect(try values("--write-path") == .words(["auto", "acquire", "writevalue", "request"]))
        #expect(try values("--catalog") == .files)
        #expect(try values("--sim-state") == .directories)
        #expect(try values("--mtu") == .none)
        guard case .words(let devices) = try values("--device") else { Issue.record("--device values"); return }
        #expect(devices.contains("sim:bolt-lock"))
        #expect(devices.contains("sim:esp32s3-mtu244-2m"))
        guard case .prefixes(let parameters) = try values("--param") else { Issue.record("--param values"); return }
        #expect(parameters.contains("window="))
        #expect(completion.values(of: try #require(update.positionals.first)) == .files)
        let campaign = try #require(Self.specs.first { $0.name == "campaign" })
        func campaignValues(_ name: String) throws -> ShellCompletion.Values {
            completion.values(of: try #require(campaign.options.first { $0.name == name }), in: campaign)
        }
        #expect(try campaignValues("--target-family") == .words(try ToolEnvironment.standard.catalog(adding: []).families.map(\.name)))
        #expect(try campaignValues("--sim-profile") == .words(DeviceProfile.builtIn.map(\.name)))
        #expect(try campaignValues("--target-list") == .files)
        #expect(try campaignValues("--window") == .none)
    }

    @Test func anUnknownShellIsAUsageError() async {
        let (code, streams) = await runTool(["completion", "fish"])
        #expect(code == 2)
        #expect(streams.standardError == "ota: error: no completion for shell 'fish' (available: bash, zsh) (see 'ota completion --help')\n")
        #expect(streams.standardOutput.isEmpty)
    }

    @Test func bashAcceptsTheScript() async throws {
        let file = try await Self.save(try await Self.script("bash"), as: "ota.bash")
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await Self.shell("/bin/bash", ["-n", file.path])
        #expect(result.code == 0, "\(result.output)")
    }

    /// zsh is not on every machine (the CI image installs it); without it only bash is checked.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/zsh") || FileManager.default.isExecutableFile(atPath: "/bin/zsh")))
    func zshAcceptsAndLoadsTheScript() async throws {
        let file = try await Self.save(try await Self.script("zsh"), as: "_ota")
        defer { try? FileManager.default.removeItem(at: file) }
        let zsh = FileManager.default.isExecutableFile(atPath: "/usr/bin/zsh") ? "/usr/bin/zsh" : "/bin/zsh"
        let syntax = try await Self.shell(zsh, ["-n", file.path])
        #expect(syntax.code == 0, "\(syntax.output)")
        let loaded = try await Self.shell(zsh, ["-f", "-c", "autoload -U compinit && compinit -u -D && source \(file.path) && print -r -- $_comps[ota]"])
        #expect(loaded.output == "_ota\n")
    }

    /// Sources the script in bash and asks it to complete, as readline would: `COMP_LINE` up to
    /// the cursor, with bash's default word breaks (which split at ':' and '=').
    static func bashCompletions(_ line: String) async throws -> [String] {
        let file = try await save(try await script("bash"), as: "ota.bash")
        defer { try? FileManager.default.removeItem(at: file) }
        let program = """
            source \(file.path)
            complete -p ota
            COMP_WORDBREAKS=$' \\t\\n"\\'><=;|&(:'
            COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
            _ota
            (( ${#COMPREPLY[@]} )) && printf '%s\\n' "${COMPREPLY[@]}"; true
            """
        let result = try await shell("/bin/bash", ["-c", program, "bash", line], directory: packageRoot)
        var lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "complete -F _ota ota")
        lines.removeFirst()
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    @Test func bashCompletesCommandsOptionsValuesAndFiles() async throws {
        #expect(try await Self.bashCompletions("ota up") == ["update"])
        #expect(try await Self.bashCompletions("ota com") == ["completion"])
        #expect(try await Self.bashCompletions("ota help ins") == ["inspect"])
        #expect(try await Self.bashCompletions("ota update --pro") == ["--protocol"])
        #expect(try await Self.bashCompletions("ota update --protocol ") == ["esp-ble-ota", "framed", "generic", "mcumgr", "nordic-dfu"])
        #expect(try await Self.bashCompletions("ota update --protocol=ge") == ["generic"])
        #expect(try await Self.bashCompletions("ota update --write-path w") == ["writevalue"])
        #expect(try await Self.bashCompletions("ota scan --transport ") == ToolEnvironment.standard.transports.providers.map(\.name))
        #expect(try await Self.bashCompletions("ota completion ") == ["bash", "zsh"])
        #expect(try await Self.bashCompletions("ota image ") == ["list", "test", "confirm", "erase"])
        #expect(try await Self.bashCompletions("ota image --sl") == ["--slot"])
        #expect(try await Self.bashCompletions("ota re") == ["reset"])
        // Readline replaces only what follows the ':' it breaks at.
        #expect(try await Self.bashCompletions("ota update --device sim:bolt") == ["bolt-lock"])
        #expect(try await Self.bashCompletions("ota abort --device sim:nrf52") == ["nrf52840-mtu244-2m"])
        #expect(try await Self.bashCompletions("ota update --mtu ") == [])
        #expect(try await Self.bashCompletions("ota update Examples/firmware/sample-a") == ["Examples/firmware/sample-app.bin"])
        #expect(try await Self.bashCompletions("ota update --protocol generic Examples/firmware/sample-a") == ["Examples/firmware/sample-app.bin"])
    }

    static let zsh = ["/usr/bin/zsh", "/bin/zsh"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Asks a real zsh line editor (in a zpty) to complete `line` with the script saved as `_ota`
    /// in a directory of `fpath`, as docs/cli.md says to install it; compadd reports the matches.
    static func zshCompletions(_ line: String) async throws -> [String] {
        let zsh = try #require(zsh)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-zsh-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(try await script("zsh").utf8).write(to: directory.appendingPathComponent("_ota"))
        let capture = directory.appendingPathComponent("capture.zsh")
        try Data(zshCapture.utf8).write(to: capture)
        // A harness that waits on a zle that never answers would hang the test: at most 30 s.
        let timeout = "/usr/bin/timeout"
        let result =
            FileManager.default.isExecutableFile(atPath: timeout)
            ? try await shell(timeout, ["30", zsh, "-f", capture.path, line, directory.path], directory: packageRoot)
            : try await shell(zsh, ["-f", capture.path, line, directory.path], directory: packageRoot)
        return result.output.split(separator: "\n").compactMap { line in
            line.hasPrefix("<") && line.hasSuffix(">") ? String(line.dropFirst().dropLast()) : nil
        }
    }

    @Test(.enabled(if: zsh != nil, "zsh is not installed"), .timeLimit(.minutes(1)))
    func zshCompletesCommandsOptionsValuesAndFiles() async throws {
        #expect(try await Self.zshCompletions("ota up") == ["update"])
        #expect(try await Self.zshCompletions("ota update --pro") == ["--protocol"])
        #expect(try await Self.zshCompletions("ota update --protocol ") == ["esp-ble-ota", "framed", "generic", "mcumgr", "nordic-dfu"])
        #expect(try await Self.zshCompletions("ota update --write-path ") == ["auto", "acquire", "writevalue", "request"])
        #expect(try await Self.zshCompletions("ota update --device sim:b") == ["sim:bolt-lock"])
        #expect(try await Self.zshCompletions("ota abort --device=sim:nrf") == ["sim:nrf-tracker", "sim:nrf52840-mtu244-2m"])
        #expect(try await Self.zshCompletions("ota completion ") == ["bash", "zsh"])
        #expect(try await Self.zshCompletions("ota image ") == ["list", "test", "confirm", "erase"])
        #expect(try await Self.zshCompletions("ota update Examples/firmware/sa") == ["sample-app.bin"])
    }

    /// The zpty harness (after Valodim's zsh-capture-completion): an interactive zsh whose
    /// compadd also prints each match, and which exits after one completion.
    static let zshCapture = #"""
        #!/bin/zsh -f
        # Prints the completions zsh offers for the line "$1", one <match> a line, with _ota loaded from
        # the directory $2 through fpath and compinit: a real zle in a zpty, with compadd reporting.
        zmodload zsh/zpty || exit 1
        zpty z zsh -f -i
        local line
        setopt rcquotes
        () {
            zpty -w z source $1
            repeat 4; do
                zpty -r z line
                [[ $line == ok* ]] && return
            done
            echo 'error initializing' >&2; exit 2
        } =( <<< "
        PROMPT=
        fpath=($2 \$fpath)
        autoload -U compinit
        compinit -u -D
        bindkey '^M' undefined
        bindkey '^J' undefined
        bindkey '^I' complete-word
        null-line () { echo -E - \$'\0' }
        compprefuncs=( null-line )
        comppostfuncs=( null-line exit )
        zstyle ':completion:*' list-grouped false
        zstyle ':completion:*' insert-tab false
        zstyle ':completion:*' list-separator ''
        compadd () {
            if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd \"\$@\"; return \$?; fi
            typeset -a __hits
            builtin compadd -A __hits \"\$@\"
            local ret=\$?
            (( \$#__hits == 0 )) && return \$ret
            builtin compadd \"\$@\"
            for i in \$__hits; do echo -E - \"<\$i>\"; done
            return \$ret
        }
        echo ok")
        zpty -w z "$1"$'\t'
        integer tog=0
        while zpty -r z; do :; done | while IFS= read -r line; do
            if [[ $line == *$'\0\r' ]]; then
                (( tog++ )) && return 0 || continue
            fi
            (( tog )) && print -r -- "${line%$'\r'}"
        done
        return 2
        """#

    // MARK: helpers

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func save(_ text: String, as name: String) async throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ota-completion-\(UUID().uuidString)-\(name)")
        try Data(text.utf8).write(to: file)
        return file
    }

    /// Runs a program to its end on a thread of its own (`offThePool`), not blocking one of the
    /// cooperative pool's threads while it runs.
    static func shell(_ executable: String, _ arguments: [String], directory: URL? = nil) async throws -> (code: Int32, output: String) {
        try await offThePool { Result { try blockingShell(executable, arguments, directory: directory) } }.get()
    }

    private static func blockingShell(_ executable: String, _ arguments: [String], directory: URL?) throws -> (code: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
