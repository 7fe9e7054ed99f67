import Foundation

/// A recorded update read back: its header and records, checked line by line.
public struct Trace: Sendable, Hashable {
    /// The largest trace file read: 256 MiB (a 1 MB image over MTU 23 records ~100,000 lines
    /// of ~150 bytes, 15 MB).
    public static let maximumFileSize = 256 << 20

    /// What was recorded.
    public var header: TraceHeader
    /// Every line after the header, in order.
    public var records: [TraceRecord]

    /// A trace.
    public init(header: TraceHeader, records: [TraceRecord]) {
        self.header = header
        self.records = records
    }

    /// The update's outcome, when the tool lived to record it.
    public var result: TraceRecord? { records.last { $0.op == .result } }

    /// Reads the trace at `url`.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` naming the file, and the line and what is
    ///   wrong with it.
    public init(contentsOf url: URL) throws(OTAError) {
        let name = MessageText.name(url.path)
        let data = try BoundedFileRead.contents(
            of: url, limit: Self.maximumFileSize, code: .invalidParameter, subject: "trace \(name)",
            largest: "the \(Self.maximumFileSize >> 20) MiB a trace may be")
        try self.init(lines: data, name: name)
    }

    /// Reads a trace from its bytes; `name` is what messages call it.
    public init(lines data: Data, name: String) throws(OTAError) {
        let decoder = JSONDecoder()
        var header: TraceHeader?
        var records: [TraceRecord] = []
        var number = 0
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) { continue }
            let record: TraceRecord
            do {
                record = try decoder.decode(TraceRecord.self, from: Data(line))
            } catch {
                throw OTAError(.invalidParameter, "trace \(name) line \(number): not a trace record (\(Self.reason(error)))")
            }
            if header == nil {
                guard record.op == .header, let first = record.header else {
                    throw OTAError(.invalidParameter, "trace \(name) line \(number): the first record must be the header (ota update --trace writes one)")
                }
                guard first.format == 1 else {
                    throw OTAError(.invalidParameter, "trace \(name): format \(first.format), but this ota reads format 1")
                }
                header = first
                continue
            }
            if let problem = Self.problem(in: record) {
                throw OTAError(.invalidParameter, "trace \(name) line \(number): \(problem)")
            }
            records.append(record)
        }
        guard let header else { throw OTAError(.invalidParameter, "trace \(name): empty") }
        self.init(header: header, records: records)
    }

    /// What a record lacks that its operation needs, or `nil`.
    static func problem(in record: TraceRecord) -> String? {
        guard record.time.isFinite, record.time >= 0 else { return "a time of \(record.time)" }
        switch record.op {
        case .header: return "a second header"
        case .connect, .subscribe, .write, .read, .disconnect, .done, .failed, .connected:
            guard record.seq != nil else { return "\(record.op) without a sequence number" }
        case .notify, .disconnected, .result: break
        }
        switch record.op {
        case .subscribe, .write, .read, .notify:
            guard let service = record.service, let characteristic = record.characteristic, GATTUUID(service) != nil, GATTUUID(characteristic) != nil
            else { return "\(record.op) without a valid svc and char" }
        default: break
        }
        if record.op == .write {
            guard record.kind == "request" || record.kind == "command" else { return "a write of kind \(record.kind ?? "none")" }
            guard record.length != nil, record.crc32 != nil else { return "a write without len and crc32" }
        }
        if let data = record.data, Hex.decode(data) == nil { return "data that is not hexadecimal" }
        if record.op == .notify, record.data == nil { return "a notification without data" }
        if record.op == .failed, record.error == nil { return "a failure without an error" }
        if record.op == .connected, record.link == nil { return "a connection without its link" }
        if let link = record.link, !(23...517).contains(link.mtu) || link.maxWriteWithoutResponse < 1 || link.maxWriteWithResponse < 1 {
            return "a link with ATT MTU \(link.mtu)"
        }
        return nil
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
        case DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty ? "not JSON" : "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" is not valid"
        default: "not JSON"
        }
    }
}
