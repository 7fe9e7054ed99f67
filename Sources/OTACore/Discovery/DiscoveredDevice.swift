/// One report of a device heard while scanning: where it is and what it advertises.
///
/// A device shows up many times during a scan (once per advertisement that changed); keep the
/// latest by ``address``.
public struct DiscoveredDevice: Sendable, Hashable {
    /// The address that reaches it through the transport that heard it, as `--device` takes it:
    /// `00:AA:01:01:00:01` (BlueZ), `sim:bolt-lock` (the simulator).
    public var address: String
    /// What it advertises: name, services, manufacturer data, RSSI. This is what a
    /// ``DeviceCatalog`` matches against (``DeviceCatalog/family(for:device:)``).
    public var advertisement: Advertisement

    /// Creates a report.
    public init(address: String, advertisement: Advertisement) {
        self.address = address
        self.advertisement = advertisement
    }

    /// The latest report of each address, in the order first heard: a device that changed what
    /// it advertises (an application now advertising its bootloader's name), or stopped
    /// advertising what it did, is one candidate, as it is now.
    public static func latestPerAddress(_ heard: [DiscoveredDevice]) -> [DiscoveredDevice] {
        var latest: [String: DiscoveredDevice] = [:]
        var order: [String] = []
        for device in heard {
            if latest[device.address] == nil { order.append(device.address) }
            latest[device.address] = device
        }
        return order.compactMap { latest[$0] }
    }
}
