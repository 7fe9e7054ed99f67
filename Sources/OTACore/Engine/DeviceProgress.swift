import Synchronization

/// What the device holds of the image, as the protocol last reported it: engine state.
///
/// The context writes it (``UpdateContext/acknowledged(total:)``); the engine's reconnect backoff
/// and the event recorder read it. Reporting never steers control flow: the recorder only reads.
final class DeviceProgress: Sendable {
    private struct State {
        var acknowledged = 0
        var firstDataOffset: Int?
    }

    private let state = Mutex(State())

    /// Bytes `[0, acknowledged)` of the image the device holds.
    var acknowledged: Int { state.withLock { $0.acknowledged } }

    /// Where this update's first data write started: the bytes of the image the device already
    /// held (a session a previous run left), not sent in this update's timed span. `nil` while
    /// no data was written.
    var firstDataOffset: Int? { state.withLock { $0.firstDataOffset } }

    /// Records where the first data write of the update starts; later writes change nothing.
    func dataStarts(at offset: Int) {
        state.withLock { if $0.firstDataOffset == nil { $0.firstDataOffset = offset } }
    }

    /// Records that the device holds the first `total` bytes (not an increment; it can go down
    /// when the device starts a session over).
    func acknowledge(total: Int) {
        state.withLock { $0.acknowledged = total }
    }
}
