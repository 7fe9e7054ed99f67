/// The result of parsing a command line against a ``CommandSpec``.
package struct ParsedArguments: Sendable {
    /// Values by option name, in the order given.
    package var values: [String: [String]] = [:]
    /// Flags that were present.
    package var flags: Set<String> = []
    /// Positional arguments in order.
    package var positionals: [String] = []
    /// The words parsed, as given (for a trace's header).
    package var words: [String] = []
    /// Whether `-h` or `--help` was given.
    package var wantsHelp = false

    /// The last value of a single-valued option.
    package func value(_ name: String) -> String? { values[name]?.last }

    /// Whether a flag was given.
    package func flag(_ name: String) -> Bool { flags.contains(name) }
}
