/// Current and average transfer rate from (time, byte count) samples.
struct RateEstimator: Sendable {
    private var samples: [(time: Duration, bytes: Int)] = []
    private var start: (time: Duration, bytes: Int)?
    let window: Duration

    init(window: Duration) { self.window = window }

    /// Records that `bytes` had moved in total at `time`.
    mutating func record(bytes: Int, at time: Duration) {
        if start == nil { start = (time, bytes) }
        samples.append((time, bytes))
        // Keep one sample older than the window so the window is always fully covered.
        while samples.count > 2, time - samples[1].time >= window {
            samples.removeFirst()
        }
    }

    /// Bytes per second over roughly the last window.
    var current: Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        return Double(last.bytes - first.bytes) / (last.time - first.time).seconds
    }

    /// Bytes per second since the first sample.
    var average: Double {
        guard let start, let last = samples.last, last.time > start.time else { return 0 }
        return Double(last.bytes - start.bytes) / (last.time - start.time).seconds
    }
}
