#if os(Linux)
import Dispatch

/// The serial executor of one ``DBusConnection``: runs the actor's jobs on a private dispatch
/// queue, the same queue on which libdbus's I/O callbacks run.
///
/// Pinning the actor and the C callbacks to one queue is what lets every libdbus call happen on
/// one thread at a time without locks, and lets the callbacks enter the actor with
/// `assumeIsolated`. The queue's threads are libdispatch's, never the cooperative pool's, so a
/// blocking libdbus call (connecting) does not starve Swift tasks. (`DispatchSerialQueue`'s own
/// executor conformance exists only on Apple platforms, hence this small type.)
final class DBusExecutor: SerialExecutor {
    /// The queue that runs jobs and libdbus callbacks.
    let queue: DispatchQueue

    /// Creates an executor over a new serial queue.
    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}
#endif
