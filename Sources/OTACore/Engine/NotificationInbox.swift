import Foundation
import Synchronization

/// Notifications from one characteristic, buffered in arrival order, read one at a time with a
/// timeout. Made by ``UpdateContext/withNotifications(from:_:)``.
public final class NotificationInbox: Sendable {
    private struct State {
        var buffered: [Data] = []
        var waiter: CheckedContinuation<Data?, Never>?
        var closed = false
    }

    private let state = Mutex(State())
    private let characteristic: CharacteristicID
    private let clock: any Clock<Duration>
    private let defaultTimeout: Duration

    init(characteristic: CharacteristicID, clock: any Clock<Duration>, defaultTimeout: Duration) {
        self.characteristic = characteristic
        self.clock = clock
        self.defaultTimeout = defaultTimeout
    }

    func deliver(_ value: Data) {
        let waiter: CheckedContinuation<Data?, Never>? = state.withLock { state in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffered.append(value)
            return nil
        }
        waiter?.resume(returning: value)
    }

    func close() {
        let waiter = state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next notification, or `nil` once the link is down and the buffer is empty.
    private func receive() async -> Data? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Data?, Never>) in
                let immediate: Data?? = state.withLock { state in
                    if !state.buffered.isEmpty { return .some(state.buffered.removeFirst()) }
                    if state.closed || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Waits for the next notification.
    ///
    /// - Parameters:
    ///   - timeout: how long to wait; the configured response timeout when `nil`.
    ///   - purpose: what is awaited, for the error message ("START response").
    /// - Throws: ``OTAError/Code/timeout`` naming `purpose`, or ``OTAError/Code/disconnected``
    ///   when the link goes down first.
    public func next(timeout: Duration? = nil, awaiting purpose: String) async throws(OTAError) -> Data {
        // A notification that already arrived is the answer: no time limit to arm (a task group,
        // two child tasks and a sleep on the clock per call), as a device that answers a burst
        // of requests at once leaves several here.
        if let ready = state.withLock({ $0.buffered.isEmpty ? nil : $0.buffered.removeFirst() }) { return ready }
        let limit = timeout ?? defaultTimeout
        let characteristic = self.characteristic
        let value: Data?
        do {
            value = try await withTimeout(
                limit,
                clock: clock,
                timeoutError: OTAError(
                    .timeout,
                    "timed out after \(limit.humanReadable) waiting for the \(purpose) on \(characteristic.characteristic); is the device running the update service, and is it powered and in range?"
                )
            ) { [self] in
                await receive()
            }
        } catch {
            throw OTAError.wrapping(error, context: "waiting for the \(purpose)")
        }
        guard let value else {
            if Task.isCancelled { throw OTAError(.cancelled, "cancelled while waiting for the \(purpose)") }
            throw OTAError(.disconnected, "link lost while waiting for the \(purpose)")
        }
        return value
    }
}
