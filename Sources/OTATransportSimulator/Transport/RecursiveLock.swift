import Foundation
import Synchronization

/// A lock its holder may take again, as `NSRecursiveLock`, for the simulated link: the device
/// model runs inside a connection event, under the link's lock, and calls back into the link
/// (`notify`).
///
/// Cheaper in the case that matters: a link's lock is taken a few times per simulated write,
/// nearly always by the run loop's thread and never contended. A nested take is a comparison
/// and an increment; an outer one a plain (not recursive) mutex and a store. `NSRecursiveLock`
/// went through Foundation's class and a recursive `pthread_mutex_t` each time.
final class RecursiveLock: @unchecked Sendable {
    // @unchecked: `depth` is read and written only by the thread that holds `mutex`; `owner`
    // is atomic. A thread reads `owner` without the mutex, but only its own identifier can
    // compare equal, and only it stores that, so the comparison is exact without ordering.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let owner = Atomic<UInt>(0)
    private var depth = 0

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() {
        let me = CurrentThread.id
        if owner.load(ordering: .relaxed) == me {
            depth += 1
            return
        }
        pthread_mutex_lock(mutex)
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
            pthread_mutex_unlock(mutex)
        }
    }
}
