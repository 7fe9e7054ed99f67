#if os(Linux)
import OTACore
import Synchronization

/// Runs async operations one at a time, in the order they arrived: a FIFO async mutex.
///
/// The transport puts `StartNotify` and `StopNotify` through one gate, so that a subscription
/// ending and a new one starting reach bluetoothd in the order their decisions were made.
final class SerialGate: Sendable {
    private struct State {
        var isBusy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Runs `body` once every operation that entered before has finished.
    ///
    /// Waiting for the turn ignores cancellation; `body` sees it.
    func run<Result: Sendable>(_ body: () async throws(TransportError) -> Result) async throws(TransportError) -> Result {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let enteredNow = state.withLock { state in
                if state.isBusy {
                    state.waiters.append(continuation)
                    return false
                }
                state.isBusy = true
                return true
            }
            if enteredNow { continuation.resume() }
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.isBusy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
#endif
