import Foundation
import OTACore
import OTAProtocolFramed
import OTATestSupport
import Testing

@Suite struct FramedTransferWindowTests {
    private let image = try! UpdateHarness.image(size: 10_000)

    private func prefixCRC(_ count: Int) -> UInt32 { CRC32.checksum(image.bytes[0..<count]) }

    @Test func keepsTheWindowFullAndNoMore() {
        var window = FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0)
        var chunks: [Range<Int>] = []
        while let chunk = window.nextChunk() { chunks.append(chunk) }
        #expect(chunks.count == 8)
        #expect(chunks.first == 0..<100 && chunks.last == 700..<800)
        #expect(window.receiveACK(offset: 400, runningCRC: prefixCRC(400)) == .proceed)
        var more = 0
        while window.nextChunk() != nil { more += 1 }
        #expect(more == 4)
    }

    @Test func nakRewindsToTheDevicesOffset() {
        var window = FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0)
        while window.nextChunk() != nil {}
        #expect(window.receiveNAK(.gap, offset: 300, runningCRC: prefixCRC(300)) == .proceed)
        #expect(window.sent == 300 && window.acknowledged == 300 && window.naks == 1)
        #expect(window.nextChunk() == 300..<400)
    }

    @Test func silenceRewindsToTheLastACKThenStalls() {
        var window = FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 200, maximumSilences: 3)
        while window.nextChunk() != nil {}
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

    @Test func wrongRunningCRCFails() {
        var window = FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0)
        _ = window.nextChunk()
        guard case .fail(let error) = window.receiveACK(offset: 100, runningCRC: 0xBAD) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("ota abort"))
    }

    @Test func ackPastTheEndAndFlashNAKFail() {
        var window = FramedTransferWindow(image: image, payloadSize: 100, batch: 4, windowBatches: 2, startingAt: 0)
        #expect(window.receiveACK(offset: 10_001, runningCRC: 0) != .proceed)
        #expect(window.receiveNAK(.flashError, offset: 0, runningCRC: 0) != .proceed)
    }

    @Test func lastACKCompletes() {
        var window = FramedTransferWindow(image: image, payloadSize: 4096, batch: 16, windowBatches: 2, startingAt: 0)
        while window.nextChunk() != nil {}
        #expect(window.receiveACK(offset: 10_000, runningCRC: image.crc32) == .complete)
        #expect(window.isComplete)
    }
}
