import Foundation

/// A transport that can often hand back the answer to a write with response within the call
/// that sends it, without an `async` call: the simulator, whose link runs ahead to the device's
/// answer when nothing else would happen first.
///
/// Optional: ``UpdateContext/writeData(_:to:covering:)`` uses it for data written with response
/// when the transport offers it, and ``Transport/write(_:to:kind:)`` otherwise. A stream of
/// writes with response (esp-ble-ota's packets) then costs a function call per write where the
/// answer came at once, rather than an asynchronous call and the hop back to the caller's
/// executor after it, which asks the task for its executor preference under the task's lock
/// (decision 0076).
public protocol ImmediateRequesting: Transport {
    /// Sends `value` as a write with response to `characteristic`, with the same checks as
    /// ``Transport/write(_:to:kind:)``, and returns its outcome when it is known within the call:
    /// the device's answer, or the failure `write` would have thrown. Otherwise the write is on
    /// its way and ``awaitAnswer(to:)`` waits for its answer: call it next, once.
    func startWriteWithResponse(_ value: Data, to characteristic: CharacteristicID) -> StartedWrite

    /// Waits for the answer to a write ``startWriteWithResponse(_:to:)`` left pending; throws
    /// what ``Transport/write(_:to:kind:)`` would have thrown for it (the device's ATT error, the
    /// link going down, the task's cancellation).
    func awaitAnswer(to write: PendingWrite) async throws(TransportError)
}

/// What ``ImmediateRequesting/startWriteWithResponse(_:to:)`` knows when it returns.
public enum StartedWrite: Sendable {
    /// The device acknowledged the write.
    case answered
    /// The write failed as ``Transport/write(_:to:kind:)`` would have thrown: refused before it
    /// was sent, answered with an error, or the link went down.
    case failed(TransportError)
    /// The write was sent; its answer is still to come (``ImmediateRequesting/awaitAnswer(to:)``).
    case pending(PendingWrite)
}

/// A write with response sent and not answered yet, as the transport that sent it knows it.
public struct PendingWrite: Sendable, Hashable {
    /// The transport's own number for the write.
    public let id: UInt64

    /// A pending write the transport numbered `id`.
    public init(id: UInt64) {
        self.id = id
    }
}
