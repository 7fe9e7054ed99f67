/// The options and positional arguments a command accepts, with their help text.
struct CommandSpec: Sendable {
    /// An option: `--name VALUE` (or `--name=VALUE`) when it has a value name, else a flag.
    struct Option: Sendable {
        var name: String
        var valueName: String?
        var help: String
        var repeatable = false
    }

    /// A positional argument.
    struct Positional: Sendable {
        var name: String
        var help: String
    }

    var name: String
    var summary: String
    var options: [Option]
    var positionals: [Positional] = []
    var discussion: String?

    func option(named name: String) -> Option? {
        options.first { $0.name == name }
    }

    /// The text `--help` prints.
    var help: String {
        var usage = "usage: ota \(name)"
        for positional in positionals { usage += " \(positional.name)" }
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
