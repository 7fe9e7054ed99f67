/// The options and positional arguments a command accepts, with their help text.
///
/// `package` so that the package's other tools (`ota-peripheral`) parse and explain their
/// arguments the same way.
package struct CommandSpec: Sendable {
    /// An option: `--name VALUE` (or `--name=VALUE`) when it has a value name, else a flag.
    package struct Option: Sendable {
        package var name: String
        package var valueName: String?
        package var help: String
        package var repeatable = false

        package init(name: String, valueName: String? = nil, help: String, repeatable: Bool = false) {
            self.name = name
            self.valueName = valueName
            self.help = help
            self.repeatable = repeatable
        }
    }

    /// A positional argument.
    package struct Positional: Sendable {
        package var name: String
        package var help: String
        /// Whether it may be left out (only the last positionals may be).
        package var isOptional = false

        package init(name: String, help: String, isOptional: Bool = false) {
            self.name = name
            self.help = help
            self.isOptional = isOptional
        }
    }

    package var name: String
    package var summary: String
    package var options: [Option]
    package var positionals: [Positional] = []
    package var discussion: String?
    /// The executable: `ota`, whose sub-command ``name`` is; or a tool of its own with an empty
    /// ``name``, such as `ota-peripheral`.
    package var program = "ota"

    package init(
        name: String, summary: String, options: [Option], positionals: [Positional] = [], discussion: String? = nil,
        program: String = "ota"
    ) {
        self.name = name
        self.summary = summary
        self.options = options
        self.positionals = positionals
        self.discussion = discussion
        self.program = program
    }

    /// How the command is invoked, for messages: `ota update`, or `ota-peripheral`.
    package var invocation: String { name.isEmpty ? program : "\(program) \(name)" }

    func option(named name: String) -> Option? {
        options.first { $0.name == name }
    }

    /// The text `--help` prints.
    package var help: String {
        var usage = "usage: \(invocation)"
        for positional in positionals { usage += positional.isOptional ? " [\(positional.name)]" : " \(positional.name)" }
        if !options.isEmpty { usage += " [options]" }
        var lines = [summary, "", usage]
        if !positionals.isEmpty {
            lines += ["", "arguments:"]
            for positional in positionals {
                lines.append("  " + Self.pad(positional.name) + positional.help)
            }
        }
        lines += ["", "options:"]
        for option in options {
            let label = option.valueName.map { "\(option.name) \($0)" } ?? option.name
            lines.append("  " + Self.pad(label) + option.help)
        }
        lines.append("  " + Self.pad("-h, --help") + "show this help")
        if let discussion { lines += ["", discussion] }
        return lines.joined(separator: "\n")
    }

    private static func pad(_ text: String) -> String {
        text.count >= 26 ? text + "  " : text + String(repeating: " ", count: 26 - text.count)
    }
}
