/// The result of parsing a command line against a ``CommandSpec``.
struct ParsedArguments: Sendable {
    /// Values by option name, in the order given.
    var values: [String: [String]] = [:]
    /// Flags that were present.
    var flags: Set<String> = []
    /// Positional arguments in order.
    var positionals: [String] = []
    /// Whether `-h` or `--help` was given.
    var wantsHelp = false

    /// The last value of a single-valued option.
    func value(_ name: String) -> String? { values[name]?.last }

    /// Whether a flag was given.
    func flag(_ name: String) -> Bool { flags.contains(name) }
}
