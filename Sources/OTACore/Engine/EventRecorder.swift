import Synchronization

/// Turns what the engine and the protocol report into ``UpdateEvent``s: state changes at once,
/// byte counts throttled to one progress event per configured interval.
final class EventRecorder: Sendable {
    private struct State {
        var sent = 0
        var writes = 0
        var position = 0
        var lastEmission: Duration?
        var rates: RateEstimator
        var state: UpdateState?
    }

    private let sink: AsyncStream<UpdateEvent>.Continuation?
    /// Whether `sink` is set. The concurrency library is resilient, so copying its
    /// `Continuation` (what binding or comparing the optional does) goes through value witnesses,
    /// about 150 instructions: the per-write path asks this instead.
    private let hasSink: Bool
    private let stopwatch: Stopwatch
    private let interval: Duration
    let totalBytes: Int
    /// What the device holds: engine state the recorder reports, and the context updates.
    let device: DeviceProgress
    private let state: Mutex<State>

    init(
        sink: AsyncStream<UpdateEvent>.Continuation?,
        stopwatch: Stopwatch,
        configuration: UpdateConfiguration,
        totalBytes: Int,
        device: DeviceProgress
    ) {
        self.sink = sink
        hasSink = sink != nil
        self.device = device
        self.stopwatch = stopwatch
        self.interval = configuration.progressInterval
        self.totalBytes = totalBytes
        self.state = Mutex(State(rates: RateEstimator(window: configuration.rateWindow)))
    }

    var elapsed: Duration { stopwatch.elapsed }

    var currentState: UpdateState? { state.withLock { $0.state } }

    func enter(_ newState: UpdateState, detail: String? = nil) {
        let now = stopwatch.elapsed
        state.withLock { $0.state = newState }
        sink?.yield(.state(newState, detail: detail, at: now))
    }

    func emit(_ event: UpdateEvent) {
        sink?.yield(event)
    }

    func note(_ text: String) {
        sink?.yield(.note(text, at: stopwatch.elapsed))
    }

    /// Data writes completed in this update, on every connection: the report's
    /// ``UpdateReport/dataWrites`` (reporting only; the stall watchdog watches the context's own
    /// count, decision 0003).
    var dataWrites: Int { state.withLock { $0.writes } }

    /// Records that the bytes of `range` were written in one data write; emits a progress event
    /// when the interval has passed and somebody receives events.
    ///
    /// Once per chunk, so it takes one lock: the device's progress is read (a lock of its own)
    /// only when an event is due, which is once per interval.
    func sent(_ range: Range<Int>) {
        guard hasSink else {
            // Nobody receives progress events: count, and skip the clock and the rate estimate
            // (the report and ``progress`` need only the counts).
            state.withLock { Self.count(range, in: &$0) }
            return
        }
        let now = stopwatch.elapsed
        let due: Bool = state.withLock { state in
            Self.count(range, in: &state)
            return state.lastEmission.map({ now - $0 >= interval }) ?? true
        }
        if due { emitProgress(at: now) }
    }

    /// Emits a progress event at `now`. A function of its own, kept out of line: the continuation's
    /// type is resilient, and a function that may yield to it sizes its frame from the type's
    /// metadata on every call, where ``sent(_:)`` is called for every chunk and yields once per
    /// interval.
    @inline(never)
    private func emitProgress(at now: Duration) {
        let acknowledged = device.acknowledged
        let progress = state.withLock { Self.snapshot(&$0, now: now, total: totalBytes, acknowledged: acknowledged) }
        sink?.yield(.progress(progress, at: now))
    }

    private static func count(_ range: Range<Int>, in state: inout State) {
        state.sent += range.count
        state.writes += 1
        state.position = range.upperBound
    }

    /// Records that the transfer moved back to `offset` (a rewind or a resume).
    func rewound(to offset: Int) {
        state.withLock { $0.position = offset }
    }

    /// Emits a progress event now, whatever the interval (after the device's progress changed,
    /// or at the end of a stream).
    func flushProgress() {
        guard hasSink else { return }
        emitProgress(at: stopwatch.elapsed)
    }

    var progress: UpdateProgress {
        let now = stopwatch.elapsed
        let acknowledged = device.acknowledged
        return state.withLock { Self.snapshot(&$0, now: now, total: totalBytes, acknowledged: acknowledged) }
    }

    private static func snapshot(_ state: inout State, now: Duration, total: Int, acknowledged: Int) -> UpdateProgress {
        state.lastEmission = now
        state.rates.record(bytes: state.sent, at: now)
        let current = state.rates.current
        let average = state.rates.average
        let rate = current > 0 ? current : average
        let remaining = max(0, total - max(state.position, acknowledged))
        let eta: Duration? = rate > 0 ? .milliseconds(Int64(Double(remaining) / rate * 1000)) : nil
        return UpdateProgress(
            totalBytes: total,
            bytesSent: state.sent,
            position: state.position,
            bytesAcknowledged: acknowledged,
            currentRate: current,
            averageRate: average,
            elapsed: now,
            estimatedTimeRemaining: eta
        )
    }
}
