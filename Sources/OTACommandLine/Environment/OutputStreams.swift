import Foundation

/// Where the tool writes: results to standard output, progress and errors to standard error.
public protocol OutputStreams: Sendable {
    /// Writes to standard output.
    func out(_ text: String)
    /// Writes to standard error.
    func err(_ text: String)
    /// Whether standard error is a terminal (progress bar) or not (plain lines).
    var errorIsTerminal: Bool { get }
}

/// The process's real standard output and error.
public struct StandardStreams: OutputStreams {
    /// Uses the process's streams.
    public init() {}

    public func out(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    public func err(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    public var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}
