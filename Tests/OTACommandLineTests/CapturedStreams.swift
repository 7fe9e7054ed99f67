import Foundation
import OTACommandLine
import Synchronization

/// Output streams that keep what the tool writes.
final class CapturedStreams: OutputStreams {
    private let storage = Mutex((out: "", err: ""))
    let errorIsTerminal: Bool

    init(terminal: Bool = false) { errorIsTerminal = terminal }

    func out(_ text: String) { storage.withLock { $0.out += text } }
    func err(_ text: String) { storage.withLock { $0.err += text } }

    var standardOutput: String { storage.withLock { $0.out } }
    var standardError: String { storage.withLock { $0.err } }
    var outputLines: [String] { standardOutput.split(separator: "\n").map(String.init) }
}

/// Runs `ota` with `arguments` and captures what it prints.
func runTool(_ arguments: [String], terminal: Bool = false) async -> (code: Int32, streams: CapturedStreams) {
    let streams = CapturedStreams(terminal: terminal)
    let code = await CommandLineTool.run(arguments, streams: streams)
    return (code, streams)
}

/// A temporary file with `size` pseudo-random bytes, removed by the caller.
func temporaryImage(size: Int) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-cli-\(UUID().uuidString).bin")
    try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }).write(to: url)
    return url
}
