import Foundation

/// The calling thread's identity (`pthread_self`) as a number, for the simulator's owner checks:
/// the run loop's thread (``VirtualTimeExecutor``) and a lock's holder (`RecursiveLock`).
enum CurrentThread {
    static var id: UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }
}
