import Foundation
import OTACore
import Testing

/// The files read from outside (trace, catalog, package manifest, key) are refused in the same
/// words, from ``BoundedFileRead/contents(of:limit:code:subject:largest:)``.
@Suite struct BoundedFileReadTests {
    static func temporary(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("ota-bounded-\(UUID().uuidString)-\(name)")
    }

    static func read(_ url: URL, limit: Int = 16) throws(OTAError) -> Data {
        try BoundedFileRead.contents(
            of: url, limit: limit, code: .invalidManifest, subject: "thing \(url.lastPathComponent)", largest: "the 16 a thing may have")
    }

    @Test func readsARegularFileUpToTheLimit() throws {
        let url = Self.temporary("ok")
        try Data(repeating: 7, count: 16).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try Self.read(url) == Data(repeating: 7, count: 16))
    }

    @Test func aMissingFileIsNamedWithTheCodeGiven() throws {
        let url = Self.temporary("missing")
        let error = try #require(throws: OTAError.self) { try Self.read(url) }
        #expect(error.code == .invalidManifest)
        #expect(error.message == "thing \(url.lastPathComponent): cannot be read (does it exist?)")
    }

    @Test func aFileOverTheLimitSaysItsSize() throws {
        let url = Self.temporary("big")
        try Data(count: 17).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let error = try #require(throws: OTAError.self) { try Self.read(url) }
        #expect(error.message == "thing \(url.lastPathComponent): 17 bytes, more than the 16 a thing may have")
    }

    @Test func aFIFOIsRefusedUnopenedAndSaysWhatItIs() throws {
        let url = Self.temporary("fifo")
        #expect(mkfifo(url.path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(at: url) }
        let error = try #require(throws: OTAError.self) { try Self.read(url) }
        #expect(error.message == "thing \(url.lastPathComponent): is a FIFO, not a regular file")
        let trace = try #require(throws: OTAError.self) { try Trace(contentsOf: url) }
        #expect(trace.code == .invalidParameter)
        #expect(trace.message == "trace \(MessageText.name(url.path)): is a FIFO, not a regular file")
    }

    @Test func aDirectoryIsNotARegularFile() throws {
        let error = try #require(throws: OTAError.self) { try Self.read(FileManager.default.temporaryDirectory) }
        #expect(error.message.hasSuffix(": is not a regular file"))
    }

    @Test func aTraceOverItsLimitSaysTheLimitInMiB() throws {
        let url = Self.temporary("huge.jsonl")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(Trace.maximumFileSize + 1))
        try handle.close()
        let error = try #require(throws: OTAError.self) { try Trace(contentsOf: url) }
        #expect(error.message == "trace \(MessageText.name(url.path)): \(Trace.maximumFileSize + 1) bytes, more than the 256 MiB a trace may be")
    }
}
