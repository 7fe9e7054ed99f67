#if os(Linux)
import OTACore

/// A local Bluetooth controller as BlueZ publishes it (`org.bluez.Adapter1` at `/org/bluez/hci0`),
/// and the choice of the adapter to use.
///
/// ```swift
/// let adapters = try await BlueZAdapter.list()                 // every adapter, powered or not
/// let adapter = try await BlueZAdapter.select("hci1")          // or nil: the first powered one
/// ```
///
/// Every failure is one line that names the cause and the fix: bluetoothd not running, no
/// adapter, an adapter powered off or blocked by rfkill, an unknown adapter name.
public struct BlueZAdapter: Sendable, Hashable, CustomStringConvertible {
    /// The adapter's name, the last element of its path: `hci0`.
    public var name: String
    /// The object path, such as `/org/bluez/hci0`.
    public var path: DBusObjectPath
    /// The controller's address, such as `00:AA:01:00:00:00`.
    public var address: String
    /// The adapter's friendly name, when set.
    public var alias: String?
    /// Whether the adapter is powered on.
    public var isPowered: Bool
    /// BlueZ's power state (`on`, `off`, `off-enabling`, `on-disabling`, `off-blocked`), when
    /// reported (BlueZ 5.64 and later).
    public var powerState: String?
    /// Whether the adapter is discovering devices.
    public var isDiscovering: Bool

    /// Creates an adapter description.
    public init(
        name: String,
        path: DBusObjectPath,
        address: String,
        alias: String? = nil,
        isPowered: Bool,
        powerState: String? = nil,
        isDiscovering: Bool = false
    ) {
        self.name = name
        self.path = path
        self.address = address
        self.alias = alias
        self.isPowered = isPowered
        self.powerState = powerState
        self.isDiscovering = isDiscovering
    }

    /// Parses an adapter's `org.bluez.Adapter1` properties; `nil` without an `Address`.
    init?(path: DBusObjectPath, properties: [String: DBusValue]) {
        guard let address = properties["Address"]?.string else { return nil }
        self.init(
            name: String(path.rawValue.split(separator: "/").last ?? Substring(path.rawValue)),
            path: path,
            address: address.uppercased(),
            alias: properties["Alias"]?.string,
            isPowered: properties["Powered"]?.bool ?? false,
            powerState: properties["PowerState"]?.string,
            isDiscovering: properties["Discovering"]?.bool ?? false)
    }

    /// "hci0 00:AA:01:00:00:00 (powered)".
    public var description: String {
        var text = "\(name) \(address)"
        if let alias, !alias.isEmpty { text += " '\(alias)'" }
        text += isPowered ? " (powered" : " (powered off"
        text += isDiscovering ? ", discovering)" : ")"
        return text
    }

    /// Lists the adapters BlueZ knows, powered or not, in name order.
    ///
    /// - Parameter bus: where bluetoothd lives; the system bus unless testing.
    /// - Throws: ``TransportError`` (``TransportError/Kind/connectionFailed``) when the bus cannot
    ///   be reached or bluetoothd is not running. An empty list is not an error.
    public static func list(bus: DBusConnection.Bus = .system) async throws(TransportError) -> [BlueZAdapter] {
        try await BlueZSession.with(bus) { session throws(TransportError) in try await session.objectTree().adapters }
    }

    /// Picks the adapter to use: the one called `name`, or when `name` is `nil` the first powered
    /// one, and checks that it is powered.
    ///
    /// - Throws: ``TransportError`` (``TransportError/Kind/connectionFailed``) with one line: no
    ///   adapter, unknown name, powered off, bluetoothd not running.
    public static func select(
        _ name: String? = nil, bus: DBusConnection.Bus = .system
    ) async throws(TransportError)
        -> BlueZAdapter
    {
        try select(name, from: try await list(bus: bus))
    }

    /// Picks the adapter called `name`, or when `name` is `nil` the first powered one, from
    /// `adapters`; the adapter must be powered.
    ///
    /// - Throws: ``TransportError`` (``TransportError/Kind/connectionFailed``): no adapter, unknown
    ///   name, or the adapter (with `nil`: every adapter) powered off.
    public static func select(_ name: String?, from adapters: [BlueZAdapter]) throws(TransportError) -> BlueZAdapter {
        let ordered = adapters.sorted(by: nameOrder)
        guard let first = ordered.first else { throw BlueZFailure.noAdapter() }
        if let name {
            guard let adapter = ordered.first(where: { $0.name == name || $0.address == name.uppercased() }) else {
                throw BlueZFailure.unknownAdapter(name, available: ordered)
            }
            guard adapter.isPowered else { throw BlueZFailure.poweredOff(adapter, among: ordered) }
            return adapter
        }
        guard let powered = ordered.first(where: \.isPowered) else {
            throw BlueZFailure.poweredOff(first, among: ordered)
        }
        return powered
    }

    /// Orders adapters by name, numbers compared as numbers (`hci2` before `hci10`).
    static func nameOrder(_ lhs: BlueZAdapter, _ rhs: BlueZAdapter) -> Bool {
        func split(_ name: String) -> (String, Int?) {
            let digits = name.reversed().prefix(while: \.isNumber).reversed()
            return (String(name.dropLast(digits.count)), Int(String(digits)))
        }
        let (lhsStem, lhsNumber) = split(lhs.name)
        let (rhsStem, rhsNumber) = split(rhs.name)
        if lhsStem != rhsStem || lhsNumber == nil || rhsNumber == nil { return lhs.name < rhs.name }
        return lhsNumber! < rhsNumber!
    }
}
#endif
