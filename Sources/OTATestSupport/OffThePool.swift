import Foundation

/// Runs `work`, which blocks (reading a child process's pipe, waiting for it to exit), on a
/// thread of its own and returns its result, so that it never holds a thread of Swift's
/// cooperative pool.
///
/// That pool has as many threads as the machine has cores (two here and on CI): two tests
/// blocking them at once stall every other test's tasks for as long as they block, so that, for
/// instance, a write socket's writer never starts within its test's 30 s.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}
