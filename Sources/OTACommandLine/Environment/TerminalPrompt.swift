import Foundation

/// Asks the person at the terminal: the question on standard error, the answer one line of
/// standard input, read on a thread of its own so that no task of the update waits for a person.
enum TerminalPrompt {
    /// A way to ask, when both standard input and standard error are terminals; `nil` otherwise
    /// (a script, a pipe, `--json`), where nobody can answer.
    static func asker(streams: any OutputStreams) -> (@Sendable (String) async -> String?)? {
        guard streams.errorIsTerminal, isatty(STDIN_FILENO) == 1 else { return nil }
        return { question in
            streams.err("\nota: \(question)")
            return await withCheckedContinuation { (answer: CheckedContinuation<String?, Never>) in
                Thread.detachNewThread { answer.resume(returning: readLine(strippingNewline: true)) }
            }
        }
    }
}
