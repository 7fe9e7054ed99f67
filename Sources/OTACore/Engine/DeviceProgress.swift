import Synchronization

/// What the device holds of the image, as the protocol last reported it: engine state.
///
/// The context writes it (``UpdateContext/acknowledged(total:)``); the engine's reconnect backoff
/// and the event recorder read it. Reporting never steers control flow: the recorder only reads.
final class DeviceProgress: Sendable {
    private let value = Mutex(0)

    /// Bytes `[0, acknowledged)` of the image the device holds.
    var acknowledged: Int { value.withLock { $0 } }

    /// Records that the device holds the first `total` bytes (not an increment; it can go down
    /// when the device starts a session over).
    func acknowledge(total: Int) {
        value.withLock { $0 = total }
    }
}
