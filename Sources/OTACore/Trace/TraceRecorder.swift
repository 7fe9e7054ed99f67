import Foundation
import Synchronization

/// Writes a recorded update, one ``TraceRecord`` a line, as it happens.
///
/// Every record reaches the file when it is made, except the bulk of an update: a write without
/// response (`write`, kind `command`) and an operation's `done`. Those wait in memory until the
/// next other record (a request, a notification, a failure, a lost link), until
/// ``bufferLimit`` bytes of lines wait, or until ``finish()``, so a long stream of chunks costs one
/// `write(2)` per 16 KiB instead of one per line (on a slow file system, such as a VM's shared
/// folder, per-line writes were a quarter of `ota`'s CPU). A trace cut short by a crash or a
/// power cut therefore holds everything up to that moment but at most the data writes made since
/// the last other record; Ctrl-C ends the update through ``finish()`` and loses nothing.
///
/// Thread-safe: the engine's operations, the notification forwarders and the tool record from
/// different tasks.
public final class TraceRecorder: Sendable {
    private struct State {
        var handle: FileHandle?
        /// Lines made and not written yet.
        var pending = Data()
        var sequence = 0
        var stopwatch: Stopwatch?
        var writeFailure: String?
    }

    private let state: Mutex<State>
    private let path: String
    /// Whether writes without response keep their bytes (they carry the image).
    public let keepsData: Bool
    /// The most bytes of lines held back before they are written: 16 KiB.
    public static let bufferLimit = 16 * 1024

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
            Self.writePending(&state)
            try? state.handle?.close()
            state.handle = nil
            return state.writeFailure
        }
        if let failure {
            throw OTAError(.invalidParameter, "the trace \(MessageText.name(path)) is incomplete: \(failure)")
        }
    }

    deinit {
        state.withLock { Self.writePending(&$0) }
    }

    private func append(_ record: TraceRecord) {
        guard let line = Self.line(record) else { return }
        let holds = record.op == .done || (record.op == .write && record.kind == "command")
        state.withLock { state in
            guard state.handle != nil else { return }
            state.pending.append(line)
            if !holds || state.pending.count >= Self.bufferLimit { Self.writePending(&state) }
        }
    }

    private static func writePending(_ state: inout State) {
        guard !state.pending.isEmpty, let handle = state.handle else { return }
        do {
            try handle.write(contentsOf: state.pending)
        } catch {
            if state.writeFailure == nil { state.writeFailure = "\(error)" }
        }
        state.pending.removeAll(keepingCapacity: true)
    }

    /// `record` as one line of JSON with its newline: keys sorted, as `JSONEncoder` writes them
    /// with `.sortedKeys` and `.withoutEscapingSlashes`. The records an update makes by the
    /// thousand (writes, results, notifications, reads: scalar fields only) are written by hand,
    /// byte for byte what the encoder would write; the rest go through the encoder.
    static func line(_ record: TraceRecord) -> Data? {
        guard record.error == nil, record.link == nil, record.characteristics == nil, record.header == nil else {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return try? encoder.encode(record) + Data([0x0A])
        }
        guard record.time.isFinite else { return nil }
        var text = "{"
        var first = true
        func field(_ key: String, _ value: String, quoted: Bool = true) {
            if !first { text += "," }
            first = false
            text += "\"" + key + "\":"
            if quoted { JSONString.append(value, to: &text) } else { text += value }
        }
        // Sorted as the encoder sorts them: char, crc32, data, kind, len, op, seq, status, svc, t.
        if let characteristic = record.characteristic { field("char", characteristic) }
        if let crc32 = record.crc32 { field("crc32", crc32) }
        if let data = record.data { field("data", data) }
        if let kind = record.kind { field("kind", kind) }
        if let length = record.length { field("len", String(length), quoted: false) }
        field("op", record.op.rawValue)
        if let seq = record.seq { field("seq", String(seq), quoted: false) }
        if let status = record.status { field("status", status) }
        if let service = record.service { field("svc", service) }
        var time = record.time.description
        if time.hasSuffix(".0") { time.removeLast(2) }
        field("t", time, quoted: false)
        text += "}\n"
        return Data(text.utf8)
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
