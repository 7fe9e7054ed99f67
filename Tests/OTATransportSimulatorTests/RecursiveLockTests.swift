import Foundation
import Testing

@testable import OTATransportSimulator

/// The simulated link's lock: its holder takes it again (the device model calls back into the
/// link inside a connection event), and it excludes every other thread until the outermost
/// unlock.
@Suite struct RecursiveLockTests {
    /// A count several threads add to, each add under the lock taken twice over.
    private final class Counter: @unchecked Sendable {
        // @unchecked: `value` is touched only under `lock`.
        let lock = RecursiveLock()
        var value = 0
    }

    @Test func itsHolderTakesItAgainAndOthersWaitForTheOutermostUnlock() async {
        let counter = Counter()
        let threads = 4
        let rounds = 20_000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<threads {
                group.addTask {
                    for _ in 0..<rounds {
                        counter.lock.lock()
                        let before = counter.value
                        counter.lock.lock()
                        counter.value = before + 1
                        counter.lock.unlock()
                        // Still held: a read and write split across the inner unlock stays whole.
                        counter.value += 1
                        counter.value -= 1
                        counter.lock.unlock()
                    }
                }
            }
        }
        #expect(counter.value == threads * rounds)
    }

    @Test func threadsTakeItInTurn() {
        let counter = Counter()
        let done = DispatchGroup()
        for _ in 0..<3 {
            done.enter()
            Thread.detachNewThread {
                for _ in 0..<10_000 {
                    counter.lock.lock()
                    counter.value += 1
                    counter.lock.unlock()
                }
                done.leave()
            }
        }
        _ = done.wait(timeout: .now() + 30)
        counter.lock.lock()
        let value = counter.value
        counter.lock.unlock()
        #expect(value == 30_000)
    }
}
