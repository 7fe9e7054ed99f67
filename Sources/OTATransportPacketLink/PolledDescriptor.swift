import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file descriptor (a serial line, a socket) read on a thread of its own: the thread polls with
/// a short timeout, so that ``close()`` ends it without signals, and owns the descriptor once it
/// runs, closing it as it stops, so that no poll ever sees the number reused.
package final class PolledDescriptor: Sendable {
    /// What one read on a readable descriptor came to.
    package enum ReadResult: Sendable {
        /// Handled (bytes delivered, or nothing to take yet): poll again.
        case more
        /// The descriptor failed, for this reason: the thread closes it and stops.
        case failed(String)
    }

    private struct State {
        var descriptor: Int32
        var closed = false
    }

    private let state: Mutex<State>
    private let receiving = Mutex(false)
    /// Set once the reading thread has let go of the descriptor; who waits for that.
    private let exit = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Takes `descriptor`, which it closes.
    package init(_ descriptor: Int32) {
        state = Mutex(State(descriptor: descriptor))
    }

    /// The system's error text for `errno`.
    package static var lastError: String { String(cString: strerror(errno)) }

    /// The descriptor, `nil` once closed.
    package var open: Int32? { state.withLock { $0.closed ? nil : $0.descriptor } }

    /// Starts the reading thread, named `name`: whenever the descriptor is readable, `read` takes
    /// what it can into the thread's buffer; `ended` is called once, with the reason it failed
    /// (`nil` when closed here).
    ///
    /// - Parameters:
    ///   - pollMilliseconds: how long one poll waits, the most ``close()`` takes to end it.
    ///   - bufferSize: the bytes the buffer handed to `read` holds.
    package func startReading(
        name: String, pollMilliseconds: Int32, bufferSize: Int, _ read: @escaping @Sendable (Int32, UnsafeMutableRawBufferPointer) -> ReadResult,
        ended: @escaping @Sendable (String?) -> Void
    ) {
        let already = receiving.withLock { started in
            defer { started = true }
            return started
        }
        precondition(!already, "a descriptor is read on one thread")
        let thread = Thread { [self] in
            let reason = readUntilEnd(pollMilliseconds: pollMilliseconds, bufferSize: bufferSize, read)
            ended(reason)
            for waiter in exit.withLock({ exit in
                exit.done = true
                defer { exit.waiters = [] }
                return exit.waiters
            }) {
                waiter.resume()
            }
        }
        thread.name = name
        thread.start()
    }

    /// The reading thread's loop; returns, having closed the descriptor, with why it stopped (`nil`:
    /// closed here).
    private func readUntilEnd(pollMilliseconds: Int32, bufferSize: Int, _ read: (Int32, UnsafeMutableRawBufferPointer) -> ReadResult) -> String? {
        var buffer = [UInt8](repeating: 0, count: bufferSize)
        while true {
            let (descriptor, closed) = state.withLock { ($0.descriptor, $0.closed) }
            guard !closed else {
                _ = closeDescriptor(descriptor)
                return nil
            }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, pollMilliseconds)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            // Closed while polling: what came is the next connection's, not this one's.
            if state.withLock({ $0.closed }) { continue }
            let result = ready < 0 ? .failed(Self.lastError) : buffer.withUnsafeMutableBytes { read(descriptor, $0) }
            guard case .failed(let reason) = result else { continue }
            let wasClosed = state.withLock { state in
                defer { state.closed = true }
                return state.closed
            }
            _ = closeDescriptor(descriptor)
            return wasClosed ? nil : reason
        }
    }

    /// Closes the descriptor and returns once the reading thread has let go of it (within its
    /// poll), so that a descriptor opened next on the same device gets every byte.
    package func closeAndWait() async {
        close()
        guard receiving.withLock({ $0 }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = exit.withLock { exit in
                if !exit.done { exit.waiters.append(continuation) }
                return exit.done
            }
            if done { continuation.resume() }
        }
    }

    /// Closes the descriptor: at once when nothing reads it, else by the reading thread within
    /// its poll.
    package func close() {
        let descriptor: Int32? = state.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            return state.descriptor
        }
        guard let descriptor, !receiving.withLock({ $0 }) else { return }
        _ = closeDescriptor(descriptor)
    }
}

/// The C library's `close`, which ``PolledDescriptor``'s own method of that name hides inside it.
private func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }
