import Foundation
import Synchronization

/// Writes a recorded update, one ``TraceRecord`` a line, as it happens: a trace cut short by a
/// crash or Ctrl-C still holds everything up to that moment.
///
/// Thread-safe: the engine's operations, the notification forwarders and the tool record from
/// different tasks.
public final class TraceRecorder: Sendable {
    private struct State {
        var handle: FileHandle?
        var sequence = 0
        var stopwatch: Stopwatch?
        var writeFailure: String?
    }

    private let state: Mutex<State>
    private let path: String
    /// Whether writes without response keep their bytes (they carry the image).
    public let keepsData: Bool

    /// Creates (or empties) the file at `url` and writes the header.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` when the file cannot be created.
    public init(url: URL, header: TraceHeader) throws(OTAError) {
        path = url.path
        keepsData = header.keepsData
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let handle = FileHandle(forWritingAtPath: url.path) else {
            throw OTAError(.invalidParameter, "cannot create the trace file \(MessageText.name(url.path)): check the folder exists and is writable")
        }
        state = Mutex(State(handle: handle))
        var record = TraceRecord(time: 0, op: .header)
        record.header = header
        append(record)
    }

    /// Starts the clock the records' times count on (the session's); the first call wins.
    public func start(clock: any Clock<Duration>) {
        state.withLock { state in
            if state.stopwatch == nil { state.stopwatch = Stopwatch(clock: clock) }
        }
    }

    /// Records a client operation and returns its sequence number, which its result repeats.
    @discardableResult
    public func begin(_ op: TraceRecord.Operation, _ fill: (inout TraceRecord) -> Void = { _ in }) -> Int {
        let sequence = state.withLock { state in
            state.sequence += 1
            return state.sequence
        }
        record(op) { record in
            record.seq = sequence
            fill(&record)
        }
        return sequence
    }

    /// Records something, stamped with the time now.
    public func record(_ op: TraceRecord.Operation, _ fill: (inout TraceRecord) -> Void = { _ in }) {
        let time = state.withLock { $0.stopwatch?.elapsed ?? .zero }
        var record = TraceRecord(time: (time.seconds * 1_000_000).rounded() / 1_000_000, op: op)
        fill(&record)
        append(record)
    }

    /// Records that the client operation `sequence` failed with `error`.
    func recordFailure(of sequence: Int, _ error: TransportError) {
        record(.failed) { record in
            record.seq = sequence
            record.error = TraceError(error)
        }
    }

    /// Closes the file.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` when a line could not be written (a full
    ///   disk): the trace is incomplete.
    public func finish() throws(OTAError) {
        let failure = state.withLock { state in
            try? state.handle?.close()
            state.handle = nil
            return state.writeFailure
        }
        if let failure {
            throw OTAError(.invalidParameter, "the trace \(MessageText.name(path)) is incomplete: \(failure)")
        }
    }

    private func append(_ record: TraceRecord) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let line = try? encoder.encode(record) else { return }
        state.withLock { state in
            guard let handle = state.handle else { return }
            do {
                try handle.write(contentsOf: line + Data([0x0A]))
            } catch {
                if state.writeFailure == nil { state.writeFailure = "\(error)" }
            }
        }
    }
}

extension TraceError {
    /// A transport failure as a trace records it.
    public init(_ error: TransportError) {
        switch error.kind {
        case .disconnected(let reason): self.init(kind: "disconnected", message: error.message, local: reason.isLocal)
        case .unknownCharacteristic: self.init(kind: "unknownCharacteristic", message: error.message)
        case .notPermitted: self.init(kind: "notPermitted", message: error.message)
        case .valueTooLong: self.init(kind: "valueTooLong", message: error.message)
        case .attError(let code): self.init(kind: "att", att: Int(code), message: error.message)
        case .connectionFailed: self.init(kind: "connectionFailed", message: error.message)
        case .other: self.init(kind: "other", message: error.message)
        }
    }

    /// The transport failure a trace recorded, as a replay raises it again.
    public var transportError: TransportError {
        switch kind {
        case "disconnected": TransportError(.disconnected(DisconnectReason(message.removingPrefix("link lost: "), isLocal: local ?? false)), message)
        case "notPermitted": TransportError(.notPermitted, message)
        case "att": TransportError(.attError(UInt8(clamping: att ?? 0x0E)), message)
        case "connectionFailed": TransportError(.connectionFailed, message)
        default: TransportError(.other, message)
        }
    }
}

extension String {
    fileprivate func removingPrefix(_ prefix: String) -> String {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self
    }
}
