#if os(Linux)
import OTACore

/// A connectable LE advertisement served to `LEAdvertisingManager1.RegisterAdvertisement`
/// (BlueZ's `doc/advertising-api.txt`): the model's service UUIDs in the advertising data and the
/// local name, which BlueZ puts in the scan response.
struct LEAdvertisement: Sendable {
    static let interface = "org.bluez.LEAdvertisement1"

    /// Where the object lives.
    var path: DBusObjectPath
    /// The service UUIDs to advertise.
    var serviceUUIDs: [GATTUUID]
    /// The local name; empty for none.
    var localName: String

    /// The object to export: its properties, and `Release`, which BlueZ calls when it drops the
    /// advertisement on its own.
    func object(onRelease: @escaping @Sendable () -> Void) -> DBusObject {
        var properties: [String: DBusValue] = [
            "Type": .string("peripheral"),
            "ServiceUUIDs": .strings(serviceUUIDs.map(\.description)),
        ]
        if !localName.isEmpty { properties["LocalName"] = .string(localName) }
        return DBusObject(path: path, interfaces: [Self.interface: properties]) { call in
            guard call.interface == Self.interface, call.member == "Release" else {
                throw DBusError(name: .unknownMethod, message: "\(path) has no method \(call.member ?? "")")
            }
            onRelease()
            return []
        }
    }

    /// Smaller advertisements to try when BlueZ refuses this one as too long: legacy advertising
    /// data holds 31 bytes, so one 128-bit UUID (18 bytes with its header) fits beside the flags,
    /// two do not.
    var fallbacks: [LEAdvertisement] {
        guard serviceUUIDs.count > 1 else { return [] }
        var smaller = self
        smaller.serviceUUIDs = [serviceUUIDs[0]]
        return [smaller]
    }
}
#endif
