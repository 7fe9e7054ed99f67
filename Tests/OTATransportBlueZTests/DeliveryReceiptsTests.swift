#if os(Linux)
import Foundation
import OTACore
import OTATransportSimulator
import Testing

@testable import OTATransportBlueZ

/// The bookkeeping of delivery receipts, without a transport: what may be written, when a
/// receipt is asked for, and what its answer confirms.
@Suite struct DeliveryReceiptsTests {
    @Test func theWindowIsAtLeastTwoWrites() {
        #expect(DeliveryReceipts(limit: 16_384, largestWrite: 510).limit == 16_384)
        #expect(DeliveryReceipts(limit: 600, largestWrite: 510).limit == 1020)
    }

    @Test func writesStopAtTheWindowAndOneReceiptIsAskedForAtHalf() {
        var receipts = DeliveryReceipts(limit: 4096, largestWrite: 512)
        var actions: [DeliveryReceipts.Action] = []
        var admitted = 0
        while receipts.admits(512) {
            actions.append(receipts.wrote(512))
            admitted += 1
        }
        #expect(admitted == 8)
        #expect(receipts.unconfirmed == 4096)
        // Asked for once, when half the window (2048) was unconfirmed; not again while outstanding.
        #expect(actions == [.none, .none, .none, .sendReceipt, .none, .none, .none, .none])
        #expect(receipts.isOutstanding)
    }

    @Test func anAnswerConfirmsWhatWasWrittenBeforeTheReceiptMinusWhatTheSocketStillHeld() {
        var receipts = DeliveryReceipts(limit: 4096, largestWrite: 512)
        for _ in 0..<4 { _ = receipts.wrote(512) }  // 2048: a receipt is asked for
        receipts.sending(upTo: receipts.written, unread: 1000)
        for _ in 0..<4 { _ = receipts.wrote(512) }  // written after the receipt left
        #expect(!receipts.admits(512))
        // 2048 written before it, 1000 of them still in the socket: 1048 confirmed.
        #expect(receipts.receiptArrived() == .sendReceipt)
        #expect(receipts.confirmed == 1048)
        #expect(receipts.unconfirmed == 4096 - 1048)
        #expect(receipts.admits(512))
        #expect(receipts.receipts == 1)
    }

    @Test func aReceiptThatConfirmsNothingNewIsFollowedByOneAfterAPause() {
        var receipts = DeliveryReceipts(limit: 2048, largestWrite: 512)
        for _ in 0..<2 { _ = receipts.wrote(512) }
        receipts.sending(upTo: receipts.written, unread: 4096)  // bluetoothd had read nothing
        #expect(receipts.receiptArrived() == .sendReceiptAfterPause)
        #expect(receipts.confirmed == 0)
        receipts.sending(upTo: receipts.written, unread: 0)
        #expect(receipts.receiptArrived() == .none)  // everything confirmed
        #expect(receipts.confirmed == 1024)
    }

    @Test func aBytesCountTakenBeforeLaterWritesBoundsTheReceipt() {
        var receipts = DeliveryReceipts(limit: 4096, largestWrite: 512)
        for _ in 0..<4 { _ = receipts.wrote(512) }
        let before = receipts.written
        _ = receipts.wrote(512)  // went into the socket while the receipt was being sent
        receipts.sending(upTo: before, unread: 0)
        _ = receipts.receiptArrived()
        #expect(receipts.confirmed == before)
    }

    @Test func aWaitingWriterAlwaysHasAReceiptOnItsWay() {
        // Any sequence of write sizes up to the largest: whenever a write is refused, a receipt
        // is outstanding, so the writer cannot wait forever.
        var generator = SeededRandom(seed: 10)
        for _ in 0..<200 {
            let largest = Int.random(in: 1...512, using: &generator)
            var receipts = DeliveryReceipts(limit: Int.random(in: 1...8192, using: &generator), largestWrite: largest)
            for _ in 0..<100 {
                let count = Int.random(in: 1...largest, using: &generator)
                if receipts.admits(count) {
                    _ = receipts.wrote(count)
                } else {
                    #expect(receipts.isOutstanding)
                    receipts.sending(upTo: receipts.written, unread: 0)
                    _ = receipts.receiptArrived()
                }
            }
        }
    }

    /// Nordic's flow: an object of 4096 bytes in 244-byte writes, then requests (Calculate
    /// Checksum, Execute, Create) answered. Each answer confirms what left the socket before it,
    /// so no receipt is ever asked for with a 16 KB window, and nothing waits.
    @Test func answeredRequestsEveryObjectLeaveNoReceiptToAsk() {
        var receipts = DeliveryReceipts(limit: 16_384, largestWrite: 244)
        var actions: [DeliveryReceipts.Action] = []
        for _ in 0..<35 {
            var object = 0
            while object < 4096 {
                let count = min(244, 4096 - object)
                #expect(receipts.admits(count))
                actions.append(receipts.wrote(count))
                object += count
            }
            receipts.requestAnswered(upTo: receipts.written, unread: 0)
        }
        #expect(actions.allSatisfy { $0 == .none })
        #expect(receipts.confirmed == 35 * 4096)
        #expect(receipts.receipts == 0)
        #expect(receipts.requestsAnswered == 35)
    }

    @Test func aRequestConfirmsOnlyWhatLeftTheSocketBeforeItAndNeverLowersTheCount() {
        var receipts = DeliveryReceipts(limit: 4096, largestWrite: 512)
        for _ in 0..<6 { _ = receipts.wrote(512) }  // 3072
        let before = receipts.written
        _ = receipts.wrote(512)  // written while the request was on its way: not covered
        receipts.requestAnswered(upTo: before, unread: 1000)
        #expect(receipts.confirmed == 3072 - 1000)
        receipts.requestAnswered(upTo: 1024, unread: 0)  // an older count confirms nothing new
        #expect(receipts.confirmed == 3072 - 1000)
        receipts.failed("Read not permitted")
        receipts.requestAnswered(upTo: receipts.written, unread: 0)
        #expect(receipts.confirmed == 3072 - 1000)  // stopped: the books are no longer kept
    }

    @Test func aFailedReceiptStopsReceiptsAndAdmitsEverything() {
        var receipts = DeliveryReceipts(limit: 1024, largestWrite: 512)
        _ = receipts.wrote(512)
        _ = receipts.wrote(512)
        #expect(!receipts.admits(512))
        receipts.failed("Read not permitted")
        #expect(receipts.admits(512))
        #expect(receipts.wrote(512) == .none)
        #expect(receipts.stopped == "Read not permitted")
    }
}
#endif
