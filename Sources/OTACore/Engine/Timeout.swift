/// Runs `operation`, failing with `timeoutError` when it has not finished after `timeout` on
/// `clock`. The operation is cancelled on timeout and must honour cancellation.
func withTimeout<T: Sendable>(
    _ timeout: Duration,
    clock: any Clock<Duration>,
    timeoutError: @autoclosure @Sendable () -> OTAError,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: TimeoutOutcome<T>.self) { group in
        group.addTask { .finished(try await operation()) }
        group.addTask {
            try await clock.sleep(for: timeout)
            return .timedOut
        }
        defer { group.cancelAll() }
        // The first child to finish decides.
        switch try await group.next() {
        case .finished(let value): return value
        case .timedOut, nil: throw timeoutError()
        }
    }
}

private enum TimeoutOutcome<T: Sendable>: Sendable {
    case finished(T)
    case timedOut
}
