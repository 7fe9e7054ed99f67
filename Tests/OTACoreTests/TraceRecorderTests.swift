import Foundation
import Testing

@testable import OTACore

/// The recorder's hand-written lines and its holding back of data writes.
@Suite struct TraceRecorderTests {
    static func encoded(_ record: TraceRecord) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try #require(String(data: encoder.encode(record), encoding: .utf8)) + "\n"
    }

    static func line(_ record: TraceRecord) throws -> String {
        let data = try #require(TraceRecorder.line(record))
        return try #require(String(data: data, encoding: .utf8))
    }

    /// A fixed sequence, so a failure repeats.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let times: [Double] = [0, 0.01965, 1e-06, 3e-05, 3, 12.5, 123_456.789012, 4_000_000, 1e16, 0.1 + 0.2]
    static let texts = [
        "8ec90002-f315-4f60-9fb8-838830daea50", "command", "", "a/b", "quote \" and \\ back", "tab\tnew\nline\r",
        "\u{01}\u{08}\u{0C}\u{1F}\u{7F}", "fullwidth ＃ and é and 🙂",
    ]

    @Test(arguments: TraceRecord.Operation.allCases)
    func handWrittenLinesAreWhatTheEncoderWrites(op: TraceRecord.Operation) throws {
        var generator = SplitMix(state: op.rawValue.utf8.reduce(1) { $0 &* 31 &+ UInt64($1) })
        for time in Self.times {
            var record = TraceRecord(time: time, op: op)
            func text() -> String? { Bool.random(using: &generator) ? Self.texts.randomElement(using: &generator) : nil }
            record.seq = Bool.random(using: &generator) ? Int.random(in: 0...1_000_000, using: &generator) : nil
            record.service = text()
            record.characteristic = text()
            record.kind = text()
            record.length = Bool.random(using: &generator) ? Int.random(in: -1...600, using: &generator) : nil
            record.crc32 = text()
            record.data = text()
            record.status = text()
            #expect(try Self.line(record) == Self.encoded(record))
            let data = try #require(TraceRecorder.line(record))
            #expect(try JSONDecoder().decode(TraceRecord.self, from: data) == record)
        }
    }

    @Test func everyFieldAtOnceAndNestedRecordsMatchTheEncoder() throws {
        var record = TraceRecord(time: 2.5, op: .write)
        record.seq = 7
        record.service = "svc"
        record.characteristic = "char"
        record.kind = "request"
        record.length = 3
        record.crc32 = "0x00000000"
        record.data = "0a0b0c"
        record.status = "completed"
        #expect(try Self.line(record) == Self.encoded(record))
        record.error = TraceError(kind: "att", att: 3, message: "not permitted")
        #expect(try Self.line(record) == Self.encoded(record))
        var connected = TraceRecord(time: 0.25, op: .connected)
        connected.link = TraceLink(LinkParameters(attMTU: 247, maximumWriteWithoutResponse: 244, maximumWriteWithResponse: 512))
        connected.characteristics = [TraceCharacteristic(service: "s", characteristic: "c", properties: 12)]
        #expect(try Self.line(connected) == Self.encoded(connected))
    }

    static func temporaryURL() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("ota-trace-\(UUID().uuidString).jsonl")
    }

    static func lines(_ url: URL) throws -> [String] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// A chunk's write and its result.
    static func recordChunk(_ recorder: TraceRecorder) {
        let write = recorder.begin(.write) {
            $0.service = "180a"
            $0.characteristic = "2a05"
            $0.kind = "command"
            $0.length = 244
            $0.crc32 = "0x12345678"
        }
        recorder.record(.done) { $0.seq = write }
    }

    static let header = TraceHeader(command: "ota update", device: "sim:x", protocolName: "generic", images: [], keepsData: false)

    @Test func dataWritesWaitForTheNextOtherRecordAndFinishWritesTheRest() throws {
        let url = Self.temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let recorder = try TraceRecorder(url: url, header: Self.header)
        #expect(try Self.lines(url).count == 1)  // the header, at once
        let request = recorder.begin(.write) {
            $0.service = "180a"
            $0.characteristic = "2a06"
            $0.kind = "request"
            $0.length = 1
            $0.crc32 = "0xA505DF1B"
        }
        #expect(try Self.lines(url).count == 2)  // a request, at once
        recorder.record(.done) { $0.seq = request }
        for _ in 0..<5 { Self.recordChunk(recorder) }
        #expect(try Self.lines(url).count == 2)  // the done and the chunks wait
        recorder.record(.notify) {
            $0.service = "180a"
            $0.characteristic = "2a06"
            $0.data = "01"
        }
        let afterNotify = try Self.lines(url)
        #expect(afterNotify.count == 14)
        #expect(afterNotify.last?.contains("\"op\":\"notify\"") == true)
        Self.recordChunk(recorder)
        #expect(try Self.lines(url).count == 14)
        try recorder.finish()
        let trace = try Trace(contentsOf: url)
        #expect(trace.records.count == 15)
        #expect(trace.records.map(\.op).suffix(3) == [.notify, .write, .done])
    }

    @Test func heldLinesAreWrittenOnceTheyReachTheLimit() throws {
        let url = Self.temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let recorder = try TraceRecorder(url: url, header: Self.header)
        let headerSize = try Data(contentsOf: url).count
        var made = 0
        while try Data(contentsOf: url).count == headerSize {
            Self.recordChunk(recorder)
            made += 2
            try #require(made < 1000)
        }
        // Written once at least 16 KiB of lines waited, not before.
        let written = try Data(contentsOf: url).count - headerSize
        #expect(written >= TraceRecorder.bufferLimit && written < TraceRecorder.bufferLimit + 200)
        Self.recordChunk(recorder)
        #expect(try Data(contentsOf: url).count - headerSize == written)
        try recorder.finish()
        #expect(try Trace(contentsOf: url).records.count == made + 2)
    }

    @Test func aRecorderLeftWithoutFinishingStillWritesWhatItHeld() throws {
        let url = Self.temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        do {
            let recorder = try TraceRecorder(url: url, header: Self.header)
            Self.recordChunk(recorder)
        }
        #expect(try Trace(contentsOf: url).records.map(\.op) == [.write, .done])
    }
}
