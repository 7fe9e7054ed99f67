import Foundation

/// One connected GATT link: the only thing an update protocol talks to.
///
/// A transport moves bytes and nothing else: it does not know which protocol runs over it.
///
/// - Important: Back-pressure lives here. ``write(_:to:kind:)`` with
///   ``WriteKind/withoutResponse`` returns only once the link has taken the value (CoreBluetooth's
///   ready signal, BlueZ's socket writability, the simulator's queue), so no protocol can drop a
///   chunk by writing too fast.
/// - Note: Implementations are reference types shared between the engine and its child tasks and
///   must be safe to call from any task.
public protocol Transport: AnyObject, Sendable {
    /// What the link negotiated. Read it after connecting; it does not change while connected.
    var link: LinkParameters { get }

    /// The characteristics the device exposes, with their properties, as discovered on connect.
    var characteristics: [CharacteristicID: CharacteristicProperties] { get }

    /// Writes `value` to a characteristic.
    ///
    /// - Throws: ``TransportError`` if the link is down, the value is longer than
    ///   ``LinkParameters/maximumWriteLength(for:)``, or the device answers a write with response
    ///   with an ATT error.
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError)

    /// Reads a characteristic's value.
    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data

    /// Enables notifications on a characteristic and returns them as a stream.
    ///
    /// The stream finishes when the link goes down; ending the iteration disables notifications.
    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data>

    /// A stream that yields once, with the reason, when the link goes down, and then finishes.
    var disconnections: AsyncStream<DisconnectReason> { get }

    /// Closes the link. Calling it on a closed link does nothing.
    func disconnect() async
}

extension Transport {
    /// Checks that the device exposes `id` and that it allows `property`.
    public func requireCharacteristic(
        _ id: CharacteristicID,
        allowing property: CharacteristicProperties
    ) throws(TransportError) {
        guard let properties = characteristics[id] else {
            throw TransportError(.unknownCharacteristic(id), "device has no characteristic \(id)")
        }
        guard properties.contains(property) else {
            throw TransportError(
                .notPermitted,
                "characteristic \(id.characteristic) does not allow \(property) (it allows: \(properties))"
            )
        }
    }

    /// Checks that the device exposes `characteristic`, that it allows writes of `kind`, and
    /// that `value` fits in one (``requireFits(_:in:)``).
    public func requireWritable(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) throws(TransportError) {
        try requireCharacteristic(characteristic, allowing: kind.requiredProperty)
        try requireFits(value, in: kind)
    }

    /// Checks that `value` is no longer than one write of `kind` carries on this link
    /// (``LinkParameters/maximumWriteLength(for:)``).
    ///
    /// - Throws: ``TransportError/Kind/valueTooLong(length:maximum:)``.
    public func requireFits(_ value: Data, in kind: WriteKind) throws(TransportError) {
        let maximum = link.maximumWriteLength(for: kind)
        guard value.count <= maximum else {
            throw TransportError(
                .valueTooLong(length: value.count, maximum: maximum),
                "a \(value.count)-byte \(kind) exceeds the link's maximum of \(maximum) bytes (ATT MTU \(link.attMTU))")
        }
    }
}
