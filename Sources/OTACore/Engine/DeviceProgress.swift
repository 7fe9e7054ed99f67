import Synchronization

/// What the device holds of the image, as the protocol last reported it: engine state.
///
/// The context writes it (``UpdateContext/acknowledged(total:)``); the engine's reconnect backoff
/// and the event recorder read it. Reporting never steers control flow: the recorder only reads.
final class DeviceProgress: Sendable {
    private struct State {
        var acknowledged = 0
        var firstDataOffset: Int?
        var firstDataTime: Duration?
    }

    private let state = Mutex(State())

    /// Bytes `[0, acknowledged)` of the image the device holds.
    var acknowledged: Int { state.withLock { $0.acknowledged } }

    /// Where this update's first data write started: the bytes of the image the device already
    /// held (a session a previous run left), not sent in this update's timed span. `nil` while
    /// no data was written.
    var firstDataOffset: Int? { state.withLock { $0.firstDataOffset } }

    /// When, on the engine's clock since the update started, the first data write of the update
    /// began: where the transfer's timed span starts. `nil` while no data was written.
    var firstDataTime: Duration? { state.withLock { $0.firstDataTime } }

    /// Records where and when the first data write of the update starts; later writes change
    /// nothing.
    func dataStarts(at offset: Int, time: Duration) {
        state.withLock {
            guard $0.firstDataOffset == nil else { return }
            $0.firstDataOffset = offset
            $0.firstDataTime = time
        }
    }

    /// Records that the device holds the first `total` bytes (not an increment; it can go down
    /// when the device starts a session over).
    func acknowledge(total: Int) {
        state.withLock { $0.acknowledged = total }
    }
}
