/// The command line could not be understood: printed as one line, exit code 2.
package struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    /// The command whose help would explain it, for the "see 'ota X --help'" hint.
    package var command: String?

    package init(_ message: String, command: String? = nil) {
        self.message = message
        self.command = command
    }

    package var description: String {
        let help = command.map { "ota \($0) --help" } ?? "ota --help"
        return "\(message) (see '\(help)')"
    }
}
