#if os(Linux)
import Dispatch
import Foundation
import OTACore
import Synchronization

/// The socket `GattCharacteristic1.AcquireWrite` hands out: each datagram written to it becomes
/// one ATT Write Command, and a full socket is the link's back-pressure.
///
/// What the socket may hold is bounded by its send buffer (`SO_SNDBUF`, made small at creation):
/// once ``write(_:)`` returns, less than one buffer's payload waits unread by bluetoothd. What
/// bluetoothd then queues itself, before the link takes it, is out of this socket's sight.
///
/// ``write(_:)`` sends the datagram right away when the socket has room. When it is full (EAGAIN)
/// the write waits, without holding a thread of Swift's cooperative pool: the waiting is done by
/// `poll` on this socket's own serial dispatch queue, which also keeps concurrent writers in
/// order. Nothing is dropped and nothing spins.
///
/// - Important: The socket owns its descriptor. ``close(failing:)`` fails every waiting write
///   with the given error and closes the descriptor once no write uses it any more. A hang-up by
///   bluetoothd (the link went down, or it released the acquisition) fails the write that saw it
///   and every later one, and is reported once to the handler set with ``onHangUp(_:)``.
final class BlueZWriteSocket: Sendable {
    /// What went through the socket.
    struct Statistics: Sendable, Hashable {
        /// Datagrams sent.
        var datagrams = 0
        /// Bytes sent.
        var bytes = 0
        /// How many times a write found the socket full and waited (in `poll`) for room.
        var waits = 0
        /// The socket's send buffer (`SO_SNDBUF` as the kernel settled it): the payload waiting in
        /// the socket for bluetoothd stays below it. `nil` when it could not be read.
        var queueLimit: Int?
        /// The most the socket held unread right after a send (`SIOCOUTQ`, in the kernel's
        /// accounting, which adds each datagram's overhead to its payload).
        var largestQueue = 0

        mutating func record(sent bytes: Int, queued: Int?) {
            datagrams += 1
            self.bytes += bytes
            largestQueue = max(largestQueue, queued ?? 0)
        }
    }

    private struct State {
        /// Why writes fail from now on; set once, by a hang-up or ``close(failing:)``.
        var failure: TransportError?
        var isClosed = false
        /// Writes handed to the queue and not finished yet.
        var queued = 0
        var active: Set<UInt64> = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
        var statistics = Statistics()
        var hangUpHandler: (@Sendable (TransportError) -> Void)?
    }

    private enum Step {
        case finished(Result<Void, TransportError>)
        case wait
        case hungUp(TransportError)
    }

    /// The ATT MTU bluetoothd returned with the socket.
    let mtu: Int
    private let descriptor: Int32
    private let wake: (read: Int32, write: Int32)
    private let queue: DispatchQueue
    private let state = Mutex(State())

    /// Takes ownership of `descriptor`, the socket of an `AcquireWrite`, and makes it non-blocking.
    ///
    /// - Parameter sendBuffer: the `SO_SNDBUF` to ask for, which bounds what can wait in the socket
    ///   (see ``BlueZConnector/Configuration/acquiredSocketSendBuffer``); `nil` keeps the socket's.
    /// - Throws: ``TransportError`` when no wake-up pipe can be made (the descriptor is closed).
    init(taking descriptor: Int32, mtu: Int, label: String, sendBuffer: Int? = nil) throws(TransportError) {
        guard let wake = SocketCalls.makeWakePipe() else {
            SocketCalls.close(descriptor)
            throw TransportError(
                .other, "cannot create a pipe to wait on the AcquireWrite socket (out of file descriptors?)")
        }
        SocketCalls.setNonBlocking(descriptor)
        let limit = sendBuffer.flatMap { SocketCalls.limitSendBuffer(descriptor, to: $0) }
        self.descriptor = descriptor
        self.wake = wake
        self.mtu = mtu
        queue = DispatchQueue(label: "OTATransportBlueZ.write-socket.\(label)")
        state.withLock { $0.statistics.queueLimit = limit ?? SocketCalls.sendBufferSize(descriptor) }
    }

    deinit {
        // Every queued write holds a reference, so nothing uses the descriptors any more.
        if !state.withLock({ $0.isClosed }) {
            SocketCalls.close(descriptor)
            SocketCalls.close(wake.read)
            SocketCalls.close(wake.write)
        }
    }

    /// What went through the socket so far.
    var statistics: Statistics { state.withLock { $0.statistics } }

    /// What the socket holds unread by bluetoothd now (`SIOCOUTQ`, in the kernel's accounting,
    /// which is at least the payload); 0 when it cannot be read or the socket is closed.
    var unreadBytes: Int {
        state.withLock { state in state.isClosed ? 0 : SocketCalls.queuedBytes(descriptor) ?? 0 }
    }

    /// Sets the handler told, once, that bluetoothd closed its end.
    func onHangUp(_ handler: @escaping @Sendable (TransportError) -> Void) {
        state.withLock { $0.hangUpHandler = handler }
    }

    /// Sends `value` as one datagram, waiting for room in the socket when it is full.
    ///
    /// - Throws: ``TransportError``: the error given to ``close(failing:)``; `.disconnected` when
    ///   bluetoothd hung up; `.other` when the task is cancelled while waiting (the value is then
    ///   not sent) or the socket fails.
    func write(_ value: Data) async throws(TransportError) {
        enum FastPath { case done, failed(TransportError), hungUp(TransportError), queued(UInt64) }
        let fast: FastPath = state.withLock { state in
            if let failure = state.failure { return .failed(failure) }
            if state.queued == 0 {
                switch SocketCalls.sendDatagram(descriptor, value) {
                case .sent:
                    state.statistics.record(sent: value.count, queued: SocketCalls.queuedBytes(descriptor))
                    return .done
                case .wouldBlock:
                    break
                case .hangUp:
                    let failure = Self.hangUpError()
                    state.failure = failure
                    return .hungUp(failure)
                case .failed(let error):
                    return .failed(Self.failure(error))
                }
            }
            state.nextID += 1
            state.queued += 1
            state.active.insert(state.nextID)
            return .queued(state.nextID)
        }
        switch fast {
        case .done: return
        case .failed(let error): throw error
        case .hungUp(let error):
            reportHangUp(error)
            throw error
        case .queued(let id):
            try await waitInQueue(id, value).get()
        }
    }

    /// Fails every waiting and later write with `error` and closes the descriptor as soon as no
    /// write uses it. Calling it again does nothing.
    func close(failing error: TransportError) {
        let first = state.withLock { state in
            if state.failure == nil { state.failure = error }
            guard !state.isClosed else { return false }
            state.isClosed = true
            SocketCalls.poke(self.wake.write)
            return true
        }
        guard first else { return }
        // Closed on the queue, after the write that may be polling them.
        let (descriptor, wakeRead, wakeWrite) = (descriptor, wake.read, wake.write)
        queue.async {
            SocketCalls.close(descriptor)
            SocketCalls.close(wakeRead)
            SocketCalls.close(wakeWrite)
        }
    }

    // MARK: - The queue

    private func waitInQueue(_ id: UInt64, _ value: Data) async -> Result<Void, TransportError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, TransportError>, Never>) in
                queue.async { self.run(id, value, continuation) }
            }
        } onCancel: {
            state.withLock { state in
                guard state.active.contains(id), !state.isClosed else { return }
                state.cancelled.insert(id)
                // Under the lock: once closed, the descriptor's number may belong to someone else.
                SocketCalls.poke(wake.write)
            }
        }
    }

    /// Sends one queued datagram, polling for room as long as needed. Runs on ``queue``.
    private func run(
        _ id: UInt64, _ value: Data, _ continuation: CheckedContinuation<Result<Void, TransportError>, Never>
    ) {
        var outcome: Result<Void, TransportError>
        var hangUp: TransportError?
        while true {
            let step: Step = state.withLock { state in
                if let failure = state.failure { return .finished(.failure(failure)) }
                if state.cancelled.contains(id) {
                    return .finished(
                        .failure(TransportError(.other, "write without response cancelled while waiting for the link")))
                }
                switch SocketCalls.sendDatagram(descriptor, value) {
                case .sent:
                    state.statistics.record(sent: value.count, queued: SocketCalls.queuedBytes(descriptor))
                    return .finished(.success(()))
                case .wouldBlock:
                    state.statistics.waits += 1
                    return .wait
                case .hangUp:
                    let failure = Self.hangUpError()
                    state.failure = failure
                    return .hungUp(failure)
                case .failed(let error):
                    return .finished(.failure(Self.failure(error)))
                }
            }
            if case .finished(let result) = step {
                outcome = result
                break
            }
            if case .hungUp(let error) = step {
                outcome = .failure(error)
                hangUp = error
                break
            }
            // Full: wait for room, a hang-up, or a poke (cancellation, close).
            let waited = SocketCalls.waitUntilWritable(descriptor, orReadable: wake.read)
            if waited == .hangUp {
                let failure: TransportError = state.withLock { state in
                    if let failure = state.failure { return failure }
                    let failure = Self.hangUpError()
                    state.failure = failure
                    hangUp = failure
                    return failure
                }
                outcome = .failure(failure)
                break
            }
            if case .failed(let error) = waited {
                outcome = .failure(Self.failure(error))
                break
            }
        }
        state.withLock { state in
            state.queued -= 1
            state.active.remove(id)
            state.cancelled.remove(id)
        }
        if let hangUp { reportHangUp(hangUp) }
        continuation.resume(returning: outcome)
    }

    private func reportHangUp(_ error: TransportError) {
        let handler = state.withLock { state in
            defer { state.hangUpHandler = nil }
            return state.hangUpHandler
        }
        handler?(error)
    }

    private static func hangUpError() -> TransportError {
        .disconnected(DisconnectReason("bluetoothd closed the AcquireWrite socket (the link went down)"))
    }

    private static func failure(_ error: Int32) -> TransportError {
        TransportError(.other, "writing to the AcquireWrite socket failed: errno \(error)")
    }
}
#endif
