import Synchronization

/// A connector that follows the device: once the device came back elsewhere after a jump (an
/// application restarting into its bootloader, at the next address or under another
/// identifier), every later connection through it goes there — the rest of this update, and
/// the next part of a multi-part update, which starts where the previous part left the device.
///
/// Sessions hand one out (``TransportSession/connector``), so that the parts of one update
/// share it whatever the transport:
///
/// ```swift
/// let connector = FollowingConnector(BlueZConnector(address: "C0:FF:EE:00:00:10"))
/// _ = try await engine.update(softDeviceAndBootloader, using: client, connector: connector)  // jumps; found at …:11
/// _ = try await engine.update(application, using: client, connector: connector)             // starts at …:11
/// ```
///
/// It finds nothing itself: ``reappeared(matching:within:)`` asks the connector it follows now,
/// and follows what that one found.
public final class FollowingConnector: Connector {
    /// The connector it started with.
    public let original: any Connector
    private let followed: Mutex<any Connector>

    /// Follows the device `connector` reaches.
    public init(_ connector: any Connector) {
        original = connector
        followed = Mutex(connector)
    }

    /// The connector every connection goes through now: ``original`` until the device was found
    /// elsewhere.
    public var current: any Connector { followed.withLock { $0 } }

    public var deviceDescription: String { current.deviceDescription }

    public var airAddress: String? { current.airAddress }

    public func connect() async throws(TransportError) -> any Transport {
        try await current.connect()
    }

    /// What the connector it follows finds; from then on it follows that one, and returns itself
    /// (so that a caller keeping it keeps following).
    public func reappeared(matching rule: ReappearanceRule, within window: Duration) async throws(OTAError) -> any Connector {
        let found = try await current.reappeared(matching: rule, within: window)
        followed.withLock { $0 = found }
        return self
    }
}
