/// Opens a ``Transport`` to one device. Reconnection goes through it, so resuming works the
/// same on every transport.
public protocol Connector: Sendable {
    /// A short name for the device this connector reaches, for messages ("sim:esp32s3-mtu244-2m").
    var deviceDescription: String { get }

    /// Connects, discovers services and negotiates the MTU.
    ///
    /// - Throws: ``TransportError`` with ``TransportError/Kind/connectionFailed`` when the device
    ///   cannot be reached.
    func connect() async throws(TransportError) -> any Transport
}
