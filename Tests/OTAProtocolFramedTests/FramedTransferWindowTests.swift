import Foundation
import OTACore
import OTAProtocolFramed
import OTATestSupport
import OTATransportSimulator
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

    /// NAKs that never let the acknowledged offset move end the transfer after the bound, in
    /// both chunk formats; progress (an ACK, or in version 1 a NAK further on) starts the count
    /// again, so a lossy link that still advances never reaches it.
    @Test(arguments: [FramedCommand.protocolVersion, FramedCommand.compactVersion])
    func naksWithoutProgressEndTheTransferAfterTheBound(version: UInt8) throws {
        var window = try FramedTransferWindow(
            image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0, maximumNAKsWithoutProgress: 5, version: version)
        func refuse(_ times: Int, at offset: Int) throws {
            for _ in 0..<times {
                while try window.nextChunk() != nil {}
                #expect(window.receiveNAK(.crcMismatch, offset: offset, runningCRC: prefixCRC(offset)) == .proceed)
            }
        }
        try refuse(5, at: 0)
        while try window.nextChunk() != nil {}
        let acknowledged = version == FramedCommand.compactVersion ? 4 * 100 - FramedChunk.batchCheckLength : 400
        #expect(window.receiveACK(offset: acknowledged, runningCRC: prefixCRC(acknowledged)) == .proceed)
        try refuse(5, at: acknowledged)
        guard case .fail(let error) = window.receiveNAK(.crcMismatch, offset: acknowledged, runningCRC: prefixCRC(acknowledged)) else {
            Issue.record("the sixth NAK without progress did not end the transfer")
            return
        }
        #expect(error.code == .deviceRejected)
        #expect(error.message.hasPrefix("device refused the data after byte \(acknowledged) of 10000 6 times in a row (last: chunk CRC mismatch)"))
        if version == FramedCommand.protocolVersion {
            // A NAK further on is progress too.
            var window = try FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0, maximumNAKsWithoutProgress: 2)
            for offset in [0, 0, 100, 100, 200, 200] {
                while try window.nextChunk() != nil {}
                #expect(window.receiveNAK(.gap, offset: offset, runningCRC: prefixCRC(offset)) == .proceed)
            }
        }
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

    // MARK: - Chunks encoded a batch at a time

    /// The window encodes a batch's chunks into one buffer; whatever the ACKs, NAKs and silences
    /// (seeded), every write it hands out must be the chunk encoded alone, at the place the split
    /// gives it: version 1 at any offset, version 2 under its sequence number with its batch check.
    @Test(arguments: [UInt8(1), UInt8(2)])
    func everyWriteIsItsChunkEncodedAloneThroughRewinds(version: UInt8) throws {
        var generator = SeededRandom(seed: UInt64(version) &* 7919)
        for round in 0..<60 {
            let payloadSize = [5, 9, 18, 100, 244][round % 5]
            let batch = [1, 2, 4, 7, 9, 16][round % 6]  // 9 and 16: a batch longer than one encoded run
            let start = [0, 1, 500, 9_000][round % 4]
            var window = try FramedTransferWindow(
                image: image, payloadSize: payloadSize, batch: batch, windowBatches: 2 + round % 3, startingAt: start, version: version)
            let split = Self.compactSplit(size: image.count, from: start, payloadSize: payloadSize, batch: batch)
            var steps = 0
            while !window.isComplete, steps < 400 {
                steps += 1
                var boundaries: [Int] = []
                let pulls = Int(generator.next() % 6)
                for _ in 0..<pulls {
                    let expectedStart = window.sent
                    guard let write = try window.nextWrite() else { break }
                    #expect(write.range.lowerBound == expectedStart, "round \(round)")
                    boundaries.append(write.range.upperBound)
                    if version == 1 {
                        #expect(write.range == write.range.lowerBound..<min(write.range.lowerBound + payloadSize, image.count))
                        #expect(write.bytes == FramedChunk.encode(offset: write.range.lowerBound, payload: try image[write.range]))
                    } else {
                        let place = try #require(split[write.range.lowerBound], "no chunk starts at \(write.range.lowerBound)")
                        #expect(write.range == place.range)
                        let expected = FramedChunk.encodeCompact(
                            sequence: place.index, payload: try image[write.range], batchCRC: place.batchEnd ? prefixCRC(write.range.upperBound) : nil)
                        #expect(write.bytes == expected, "chunk \(place.index) of round \(round)")
                    }
                }
                // A device's answer to what it got: an ACK or a NAK at a boundary it reached, or none.
                let target = boundaries.isEmpty ? window.sent : boundaries[Int(generator.next() % UInt64(boundaries.count))]
                switch generator.next() % 4 {
                case 0, 1:
                    _ = window.receiveACK(offset: target, runningCRC: prefixCRC(target))
                case 2:
                    let rewind = boundaries.count > 1 ? boundaries[0] : window.acknowledged
                    _ = window.receiveNAK(.gap, offset: rewind, runningCRC: prefixCRC(rewind))
                default:
                    // Too many silences in a row end the transfer (the driver would BEGIN again).
                    if case .fail = window.timedOut() { steps = 400 }
                }
            }
        }
    }

    /// Version 2's split of the image from `start`: where each chunk begins, its range, index
    /// and whether it ends a batch.
    private static func compactSplit(size: Int, from start: Int, payloadSize: Int, batch: Int) -> [Int: (range: Range<Int>, index: Int, batchEnd: Bool)] {
        var split: [Int: (range: Range<Int>, index: Int, batchEnd: Bool)] = [:]
        var offset = start
        var index = 0
        while offset < size {
            let remaining = size - offset
            let batchEnd = (index + 1) % batch == 0 || remaining <= payloadSize
            let length = batchEnd ? min(payloadSize - FramedChunk.batchCheckLength, remaining) : payloadSize
            split[offset] = (offset..<(offset + length), index, batchEnd)
            offset += length
            index += 1
        }
        return split
    }
}
