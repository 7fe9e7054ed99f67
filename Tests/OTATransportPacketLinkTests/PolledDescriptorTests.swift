import Foundation
import Synchronization
import Testing

@testable import OTATransportPacketLink

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The reading thread on one end of a pipe.
@Suite("Polled descriptor", .timeLimit(.minutes(1)))
struct PolledDescriptorTests {
    /// A pipe: what is written to `input` is read from `output`.
    static func pipeEnds() throws -> (output: Int32, input: Int32) {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    /// Reads from `descriptor` into a stream of chunks; `ended` records the reason it stopped.
    static func start(_ descriptor: PolledDescriptor, ended: Reasons) -> AsyncStream<Data> {
        let (chunks, continuation) = AsyncStream.makeStream(of: Data.self)
        descriptor.startReading(
            name: "test-read", pollMilliseconds: 5, bufferSize: 64,
            { descriptor, buffer in
                let count = read(descriptor, buffer.baseAddress, buffer.count)
                if count > 0 {
                    continuation.yield(Data(bytes: buffer.baseAddress!, count: count))
                    return .more
                }
                return .failed(count == 0 ? "end of file" : PolledDescriptor.lastError)
            },
            ended: { reason in
                ended.record(reason)
                continuation.finish()
            })
        return chunks
    }

    @Test("bytes written to the other end reach the reader; closing here ends it with no reason, before closeAndWait returns")
    func readsThenCloses() async throws {
        let (output, input) = try Self.pipeEnds()
        defer { _ = close(input) }
        let descriptor = PolledDescriptor(output)
        let ended = Reasons()
        var chunks = Self.start(descriptor, ended: ended).makeAsyncIterator()
        #expect(write(input, "hi", 2) == 2)
        #expect(await chunks.next() == Data("hi".utf8))
        #expect(descriptor.open == output)
        await descriptor.closeAndWait()
        #expect(ended.all == [nil])
        #expect(descriptor.open == nil)
        #expect(await chunks.next() == nil)
    }

    @Test("a failed read ends the thread once, with its reason, and the descriptor is closed")
    func failedRead() async throws {
        let (output, input) = try Self.pipeEnds()
        let descriptor = PolledDescriptor(output)
        let ended = Reasons()
        var chunks = Self.start(descriptor, ended: ended).makeAsyncIterator()
        _ = close(input)
        #expect(await chunks.next() == nil)
        #expect(ended.all == ["end of file"])
        #expect(descriptor.open == nil)
        // Closing after the end changes nothing and does not wait.
        await descriptor.closeAndWait()
        #expect(ended.all == ["end of file"])
    }

    @Test("closing a descriptor nothing reads closes it at once")
    func closesUnread() throws {
        let (output, input) = try Self.pipeEnds()
        defer { _ = close(input) }
        let descriptor = PolledDescriptor(output)
        descriptor.close()
        #expect(descriptor.open == nil)
    }
}

/// The reasons a reading thread ended with, in order.
final class Reasons: Sendable {
    private let reasons = Mutex<[String?]>([])
    var all: [String?] { reasons.withLock { $0 } }
    func record(_ reason: String?) { reasons.withLock { $0.append(reason) } }
}
