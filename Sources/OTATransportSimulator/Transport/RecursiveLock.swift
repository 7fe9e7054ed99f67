import Foundation
import Synchronization

/// A lock its holder may take again, as `NSRecursiveLock`, for the simulated link: the device
/// model runs inside a connection event, under the link's lock, and calls back into the link
/// (`notify`).
///
/// Cheaper in the case that matters: a link's lock is taken a few times per simulated write,
/// nearly always by the run loop's thread and never contended. A nested take is a comparison
/// and an increment; an outer one an atomic increment of a count of takers and a store (a
/// "benaphore": only a thread that finds the count above zero waits, on a semaphore the holder
/// signals as it leaves). `NSRecursiveLock` went through Foundation's class and a recursive
/// `pthread_mutex_t` each time; a plain `pthread_mutex_t` still cost about 100 instructions
/// per round, locked and unlocked (about 5 % of the simulator's work per Nordic DFU write).
final class RecursiveLock: @unchecked Sendable {
    // @unchecked: `depth` is read and written only by the thread that holds the lock; `owner`
    // and `takers` are atomic. A thread reads `owner` without the lock, but only its own
    // identifier can compare equal, and only it stores that, so the comparison is exact without
    // ordering.
    /// Threads holding or waiting for the lock: the one that takes it from zero holds it; any
    /// other waits on `turn`, which each leaving holder signals once while others wait.
    private let takers = Atomic<Int>(0)
    /// A dispatch semaphore, not a POSIX `sem_t`: Darwin has no unnamed POSIX semaphores.
    private let turn = DispatchSemaphore(value: 0)
    private let owner = Atomic<UInt>(0)
    private var depth = 0

    func lock() {
        let me = CurrentThread.id
        if owner.load(ordering: .relaxed) == me {
            depth += 1
            return
        }
        if takers.wrappingAdd(1, ordering: .acquiring).oldValue > 0 {
            // Another thread holds it: its unlock signals once for each waiter, in turn.
            turn.wait()
        }
        owner.store(me, ordering: .relaxed)
        depth = 1
    }

    /// Whether the next ``unlock()`` releases the lock: the calling thread holds it once, not
    /// nested.
    ///
    /// - Precondition: the calling thread holds the lock.
    var isHeldOnce: Bool { depth == 1 }

    /// - Precondition: the calling thread holds the lock.
    func unlock() {
        assert(owner.load(ordering: .relaxed) == CurrentThread.id, "unlocked by a thread that does not hold the lock")
        depth -= 1
        if depth == 0 {
            owner.store(0, ordering: .relaxed)
            if takers.wrappingSubtract(1, ordering: .releasing).oldValue > 1 {
                // A thread waits (or is about to): hand the lock over.
                turn.signal()
            }
        }
    }
}
