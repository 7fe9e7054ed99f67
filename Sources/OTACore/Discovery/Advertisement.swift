import Foundation

/// What a device says about itself before anyone connects: its name, the services it
/// advertises, its manufacturer data and how strong it is heard.
public struct Advertisement: Sendable, Hashable {
    /// The advertised local name, if any.
    public var name: String?
    /// The advertised service UUIDs.
    public var serviceUUIDs: [GATTUUID]
    /// Manufacturer-specific data by Bluetooth SIG company identifier.
    public var manufacturerData: [UInt16: Data]
    /// Received signal strength in dBm, when known.
    public var rssi: Int?

    /// Creates an advertisement.
    public init(name: String? = nil, serviceUUIDs: [GATTUUID] = [], manufacturerData: [UInt16: Data] = [:], rssi: Int? = nil) {
        self.name = name
        self.serviceUUIDs = serviceUUIDs
        self.manufacturerData = manufacturerData
        self.rssi = rssi
    }
}
