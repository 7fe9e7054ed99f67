/// Opens a ``Transport`` to one device. Reconnection goes through it, so resuming works the
/// same on every transport.
public protocol Connector: Sendable {
    /// A short name for the device this connector reaches, for messages ("sim:esp32s3-mtu244-2m").
    var deviceDescription: String { get }

    /// The device's address as the transport sees it on the air (`C0:FF:EE:00:00:10`), for a
    /// protocol that must find the device again under an address derived from it
    /// (``ReappearanceRule``); `nil` when the transport does not see addresses.
    var airAddress: String? { get }

    /// Connects, discovers services and negotiates the MTU.
    ///
    /// - Throws: ``TransportError`` with ``TransportError/Kind/connectionFailed`` when the device
    ///   cannot be reached.
    func connect() async throws(TransportError) -> any Transport

    /// A connector to the device this one reached, after it restarted into another role (an
    /// application into its bootloader) and advertises as `rule` says: the transport listens
    /// for at most `window` and takes the one device the rule accepts, never another.
    ///
    /// The default, for a transport that cannot listen, is this connector again when the rule
    /// allows its address (a device that comes back where it was).
    ///
    /// - Throws: ``OTAError/Code/connectionFailed`` naming the rule and the candidates heard
    ///   (``ReappearanceRule/failure(heard:after:)``) when none or several match.
    func reappeared(matching rule: ReappearanceRule, within window: Duration) async throws(OTAError) -> any Connector
}

extension Connector {
    /// Not known.
    public var airAddress: String? { nil }

    /// This connector, when the rule allows its address; a transport that can listen for
    /// devices implements this.
    public func reappeared(matching rule: ReappearanceRule, within window: Duration) async throws(OTAError) -> any Connector {
        if let airAddress, !rule.addresses.isEmpty, !rule.addresses.contains(airAddress.uppercased()) {
            throw OTAError(
                .connectionFailed,
                "the device comes back \(rule.description), but the transport of \(deviceDescription) cannot look for another device"
            )
        }
        return self
    }
}
