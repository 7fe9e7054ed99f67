/// Where a device advertises and under which name, when its firmware decides rather than the
/// hardware: an nRF5 bootloader without bonds advertises at the next address, under the name
/// the application was told (``DeviceModel/advertising(hardwareAddress:)``).
public struct AdvertisedIdentity: Sendable, Hashable {
    /// The address it advertises at.
    public var address: String
    /// The name it advertises; `nil` keeps the host's.
    public var name: String?

    /// Creates an identity.
    public init(address: String, name: String?) {
        self.address = address
        self.name = name
    }
}
