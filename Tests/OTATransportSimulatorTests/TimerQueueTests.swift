import Foundation
import Synchronization
import Testing

@testable import OTATransportSimulator

/// The executor's timer heap: timers come out by deadline, those due at the same instant in the
/// order they were set, each with its own call, whatever the mix of inserts and removals.
@Suite struct TimerQueueTests {
    /// Inserts and removals in a seeded random mix, checked against a sorted list at every
    /// removal: deadlines drawn from a few values so that many tie, sleeps (no call) among calls.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func timersComeOutByDeadlineThenByTheOrderTheyWereSet(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var queue = TimerQueue()
        var expected: [(deadline: Int, id: UInt64)] = []
        let fired = FiredLog()
        var nextID: UInt64 = 0
        for _ in 0..<2_000 {
            if expected.isEmpty || random.next() % 3 != 0 {
                nextID += 1
                let id = nextID
                let deadline = Int(random.next() % 8)
                let isSleep = random.next() % 4 == 0
                var call: (@Sendable () -> Void)?
                if !isSleep { call = { @Sendable in fired.append(id) } }
                queue.insert(TimerQueue.Entry(deadline: .milliseconds(deadline), id: id, call: call))
                expected.append((deadline, id))
            } else {
                let next = expected.indices.min { (expected[$0].deadline, expected[$0].id) < (expected[$1].deadline, expected[$1].id) }!
                let want = expected.remove(at: next)
                #expect(queue.firstDeadline == .milliseconds(want.deadline))
                let entry = queue.removeFirst()
                #expect(entry.id == want.id)
                #expect(entry.deadline == .milliseconds(want.deadline))
                let before = fired.ids.count
                entry.call?()
                let calls = fired.ids
                // A call runs its own timer's work; a sleep has none.
                #expect(calls.count == before || calls.last == want.id)
            }
        }
        while let want = expected.indices.min(by: { (expected[$0].deadline, expected[$0].id) < (expected[$1].deadline, expected[$1].id) }) {
            let entry = queue.removeFirst()
            #expect(entry.id == expected.remove(at: want).id)
        }
        #expect(queue.isEmpty)
    }

    @Test func aCancelledCallComesOutWithoutItsCall() {
        var queue = TimerQueue()
        queue.insert(.init(deadline: .milliseconds(2), id: 1, call: {}))
        queue.insert(.init(deadline: .milliseconds(1), id: 2, call: {}))
        queue.cancelCall(1)
        #expect(queue.removeFirst().call != nil)
        let cancelled = queue.removeFirst()
        #expect(cancelled.id == 1)
        #expect(cancelled.call == nil)
    }
}

/// The ids of the timers whose calls ran, in order.
private final class FiredLog: Sendable {
    private let storage = Mutex<[UInt64]>([])
    func append(_ id: UInt64) { storage.withLock { $0.append(id) } }
    var ids: [UInt64] { storage.withLock { $0 } }
}
