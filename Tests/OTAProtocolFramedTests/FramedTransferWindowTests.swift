import Foundation
import OTACore
import OTAProtocolFramed
import OTATestSupport
import Testing

@Suite struct FramedTransferWindowTests {
    private let image = try! UpdateHarness.image(size: 10_000)

    private func prefixCRC(_ count: Int) -> UInt32 { CRC32.checksum(image.bytes[0..<count]) }

    @Test func keepsTheWindowFullAndNoMore() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0)
        var chunks: [Range<Int>] = []
        while let chunk = try window.nextChunk() { chunks.append(chunk) }
        #expect(chunks.count == 8)
        #expect(chunks.first == 0..<100 && chunks.last == 700..<800)
        #expect(window.receiveACK(offset: 400, runningCRC: prefixCRC(400)) == .proceed)
        var more = 0
        while try window.nextChunk() != nil { more += 1 }
        #expect(more == 4)
    }

    @Test func nakRewindsToTheDevicesOffset() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0)
        while try window.nextChunk() != nil {}
        #expect(window.receiveNAK(.gap, offset: 300, runningCRC: prefixCRC(300)) == .proceed)
        #expect(window.sent == 300 && window.acknowledged == 300 && window.naks == 1)
        #expect(try window.nextChunk() == 300..<400)
    }

    @Test func silenceRewindsToTheLastACKThenStalls() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 200, maximumSilences: 3)
        while try window.nextChunk() != nil {}
        for _ in 0..<3 {
            #expect(window.timedOut() == .proceed)
            #expect(window.sent == 200)
        }
        guard case .fail(let error) = window.timedOut() else {
            Issue.record("expected a stall")
            return
        }
        #expect(error.code == .stalled)
    }

    @Test func wrongRunningCRCFails() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0)
        _ = try window.nextChunk()
        guard case .fail(let error) = window.receiveACK(offset: 100, runningCRC: 0xBAD) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("ota abort"))
    }

    @Test func ackPastTheEndAndFlashNAKFail() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0)
        #expect(window.receiveACK(offset: 10_001, runningCRC: 0) != .proceed)
        #expect(window.receiveNAK(.flashError, offset: 0, runningCRC: 0) != .proceed)
    }

    @Test func lastACKCompletes() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 4096, batch: 16, windowBatches: 2, startingAt: 0)
        while try window.nextChunk() != nil {}
        #expect(window.receiveACK(offset: 10_000, runningCRC: image.crc32) == .complete)
        #expect(window.isComplete)
    }

    // MARK: - Adaptive window

    /// Losses halve the batches in flight down to one; clean ACKs bring them back one per batch.
    @Test func theWindowShrinksOnLossAndGrowsBackAfterCleanBatches() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 100, batch: 2, windowBatches: 4, startingAt: 0)
        #expect(try inFlight(&window) == 800)  // 4 batches of 2 × 100
        #expect(window.receiveNAK(.gap, offset: 200, runningCRC: prefixCRC(200)) == .proceed)
        #expect(window.windowBatches == 2)
        #expect(try inFlight(&window) == 400)  // the NAK confirmed 200; two batches from there
        #expect(window.timedOut() == .proceed)
        #expect(window.windowBatches == 1)
        #expect(window.receiveNAK(.crcMismatch, offset: 200, runningCRC: prefixCRC(200)) == .proceed)
        #expect(window.windowBatches == 1)  // never below one batch
        #expect(try inFlight(&window) == 200)
        // The first ACK after a loss only confirms; each clean one after it adds a batch.
        var acked = 400
        #expect(window.receiveACK(offset: acked, runningCRC: prefixCRC(acked)) == .proceed)
        #expect(window.windowBatches == 1)
        for expected in [2, 3, 4, 4] {
            _ = try inFlight(&window)
            acked += 200
            #expect(window.receiveACK(offset: acked, runningCRC: prefixCRC(acked)) == .proceed)
            #expect(window.windowBatches == expected)
        }
        #expect(window.smallestWindowBatches == 1 && window.maximumWindowBatches == 4)
    }

    private func inFlight(_ window: inout FramedTransferWindow) throws -> Int {
        while try window.nextChunk() != nil {}
        return window.sent - window.acknowledged
    }

    // MARK: - Version 2

    /// Compact chunks: `payloadSize` bytes each, 4 fewer in every batch's last chunk (and in the
    /// one reaching the end), which carries the CRC-32 of the image prefix.
    @Test func compactChunksCarryASequenceAndABatchCheck() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 18, batch: 4, windowBatches: 2, startingAt: 0, version: 2)
        var writes: [(range: Range<Int>, bytes: Data)] = []
        while let write = try window.nextWrite() { writes.append(write) }
        #expect(writes.count == 8)
        #expect(writes.map(\.range.count) == [18, 18, 18, 14, 18, 18, 18, 14])
        for (index, write) in writes.enumerated() {
            let chunk = try #require(FramedChunk.decodeCompact(write.bytes))
            #expect(Int(chunk.sequence) == index)
            #expect(try chunk.payload == image[write.range])
            #expect(chunk.batchCRC == (index % 4 == 3 ? prefixCRC(write.range.upperBound) : nil))
        }
        // The first batch is acknowledged; a gap NAK at chunk 5's start rewinds there (its CRC is
        // not checked: bytes past the last batch check are not vouched for), under its number.
        #expect(window.receiveACK(offset: 68, runningCRC: prefixCRC(68)) == .proceed)
        #expect(window.receiveNAK(.gap, offset: writes[5].range.lowerBound, runningCRC: 0) == .proceed)
        let next = try window.nextWrite()
        let resent = try #require(next)
        #expect(resent.range == writes[5].range && resent.bytes == writes[5].bytes)
        // A NAK inside a chunk names no boundary of the split: it fails.
        guard case .fail(let error) = window.receiveNAK(.gap, offset: 70, runningCRC: 0) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .malformedResponse)
    }

    @Test func compactTimeoutResendsTheSameChunksUnderTheSameNumbers() throws {
        var window = try FramedTransferWindow(image: image, payloadSize: 18, batch: 4, windowBatches: 2, startingAt: 1000, version: 2)
        var first: [Data] = []
        while let write = try window.nextWrite() { first.append(write.bytes) }
        #expect(window.timedOut() == .proceed)
        var again: [Data] = []
        while let write = try window.nextWrite() { again.append(write.bytes) }
        #expect(again == Array(first.prefix(again.count)))  // the window is smaller now, same bytes
        #expect(again.count == 4)
    }

    @Test func compactChunkReachingTheEndCarriesTheCheckOfTheWholeImage() throws {
        // 10 bytes left at 9990: one batch-end chunk of 10 bytes (18 - 4 ≥ 10).
        var window = try FramedTransferWindow(image: image, payloadSize: 18, batch: 4, windowBatches: 2, startingAt: 9_990, version: 2)
        let next = try window.nextWrite()
        let last = try #require(next)
        #expect(last.range == 9_990..<10_000)
        #expect(FramedChunk.decodeCompact(last.bytes)?.batchCRC == image.crc32)
        // 16 bytes left: 14 in a batch-end chunk, then 2 in another.
        var tail = try FramedTransferWindow(image: image, payloadSize: 18, batch: 4, windowBatches: 2, startingAt: 9_984, version: 2)
        #expect(try tail.nextChunk() == 9_984..<9_998)
        #expect(try tail.nextChunk() == 9_998..<10_000)
        #expect(try tail.nextChunk() == nil)
    }
}
