import Foundation

/// A transport that can take a write without response on the spot when its queue has room,
/// without an `async` call: CoreBluetooth's `canSendWriteWithoutResponse`, a non-blocking socket
/// write, the simulator's queue.
///
/// Optional: ``UpdateContext/writeData(_:to:covering:)`` tries it first when the transport offers
/// it and falls back to ``Transport/write(_:to:kind:)``, which waits for room, when it returns
/// `false`. Data streams write back to back, and most writes find room: each then costs a
/// function call rather than an asynchronous call, its frame and the hop back to the caller's
/// executor after it (decision 0070).
public protocol ImmediateWriting: Transport {
    /// Queues `value` as a write without response to `characteristic` if the link can take it
    /// now: its queue has room and no write waits ahead of it. Returns `false`, having done
    /// nothing, when it cannot (the caller then waits in ``Transport/write(_:to:kind:)``).
    ///
    /// - Throws: what ``Transport/write(_:to:kind:)`` throws for the same write before it would
    ///   wait: a missing or unwritable characteristic, a value longer than the link takes. A link
    ///   that is down is thrown here or answered `false` (``Transport/write(_:to:kind:)`` then
    ///   throws it).
    func writeWithoutResponseIfReady(_ value: Data, to characteristic: CharacteristicID) throws(TransportError) -> Bool
}
