/// The command line could not be understood: printed as one line, exit code 2.
struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    /// The command whose help would explain it, for the "see 'ota X --help'" hint.
    var command: String?

    init(_ message: String, command: String? = nil) {
        self.message = message
        self.command = command
    }

    var description: String {
        let help = command.map { "ota \($0) --help" } ?? "ota --help"
        return "\(message) (see '\(help)')"
    }
}
