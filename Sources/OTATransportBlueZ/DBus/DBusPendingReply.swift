#if os(Linux)
/// One method call waiting for its reply: a libdbus pending call and the continuation of the task
/// that awaits it.
///
/// Lives on the connection's queue: libdbus calls ``complete()`` while dispatching, the connection
/// calls ``fail(_:)`` when the call is cancelled or the connection closes. Whichever comes first
/// resumes the task; the other does nothing.
final class DBusPendingReply {
    private var continuation: CheckedContinuation<DBusMessage, any Error>?
    /// The pending call (DBusPendingCall*), one reference owned until ``release()``.
    private var pending: OpaquePointer?

    /// Creates a waiter for a call that is about to be sent.
    init(_ continuation: CheckedContinuation<DBusMessage, any Error>) {
        self.continuation = continuation
    }

    /// Takes ownership of the pending call and asks libdbus to report its completion.
    func attach(to pending: OpaquePointer) -> Bool {
        self.pending = pending
        return DBusCalls.setNotify(pending, self)
    }

    /// The reply arrived, or libdbus gave up waiting (its timeout yields a `NoReply` error reply).
    func complete() {
        guard let pending, let continuation else { return }
        self.continuation = nil
        guard let reply = DBusCalls.stealReply(pending) else {
            continuation.resume(throwing: DBusError(name: .noReply, message: "the call completed without a reply"))
            return
        }
        defer { DBusCalls.release(message: reply) }
        continuation.resume(with: Result { try DBusMessage(decoding: reply) })
    }

    /// Stops waiting and throws `error` to the caller.
    func fail(_ error: any Error) {
        if let pending { DBusCalls.cancel(pending) }
        continuation?.resume(throwing: error)
        continuation = nil
    }

    /// Releases the pending call; call once the task has resumed.
    func release() {
        if let pending { DBusCalls.release(pending: pending) }
        pending = nil
    }
}
#endif
