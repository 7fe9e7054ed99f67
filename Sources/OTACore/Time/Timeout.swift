/// Runs `operation`, failing with `timeoutError` when it has not finished after `timeout` on
/// `clock`.
///
/// The one time limit of the framework: the engine, the protocols' contexts and the transports
/// all bound their waits with it, on the clock they were given (a ``Clock`` of the simulation or
/// a test, or ``RealTimeClock`` for real devices), so that a test never waits for real.
///
/// Each call sleeps on `clock` in a child task and cancels that sleep when the operation wins;
/// what a cancelled sleep holds is the clock's business. On a real device give ``RealTimeClock``,
/// not `ContinuousClock`: on Linux a cancelled `Task.sleep` keeps its timer until its deadline,
/// and a fast link piles up thousands of them (decision 0045).
///
/// ```swift
/// let reply = try await withTimeout(.seconds(5), clock: clock, timeoutError: OTAError(.timeout, "no reply")) {
///     try await inbox.next()
/// }
/// ```
///
/// - Important: On timeout the operation is cancelled and `timeoutError` is thrown once the
///   operation has returned; the operation must honour cancellation. When the calling task is
///   cancelled, the operation is cancelled too and the error is what it throws (or
///   `CancellationError` from the clock).
/// - Parameters:
///   - timeout: how long the operation may take.
///   - clock: the clock the time limit runs on.
///   - timeoutError: the error thrown when the time runs out.
///   - operation: the work to bound.
/// - Returns: what `operation` returns when it finishes in time.
public func withTimeout<T: Sendable>(
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
