/// How to recognise the device an update started on once it has restarted into another role
/// (an application jumping to its bootloader) and advertises again, perhaps under another
/// address and another name.
///
/// A candidate heard on the air is the device only when it satisfies everything the rule knows:
/// its address is one of ``addresses`` (when the rule names addresses and the transport can see
/// them), and it advertises exactly ``name`` (when the tool set one). A rule knows at least one
/// of the two, so "any bootloader in range" is never a match; when two candidates match, neither
/// is taken.
///
/// ```swift
/// let rule = ReappearanceRule(addresses: ["C0:FF:EE:00:00:10", "C0:FF:EE:00:00:11"], name: "Dfu3A9F1")
/// switch rule.select(from: heard) {
/// case .found(let device): connect(to: device.address)
/// case .none, .ambiguous: throw rule.failure(heard: heard, after: .seconds(10))
/// }
/// ```
///
/// A value type, tested without a transport; transports that can scan use it to find the
/// device (``Connector/reappeared(matching:within:)``).
public struct ReappearanceRule: Sendable, Hashable, CustomStringConvertible {
    /// The addresses the device may come back at, the most likely first, in the transport's
    /// form (upper case for Bluetooth addresses). Empty when the address was not known.
    public var addresses: [String]
    /// The name it advertises once back, when the tool chose one; `nil` when not known.
    public var name: String?

    /// Creates a rule. At least one address or a name is needed: a rule that knows neither would
    /// take any device.
    public init(addresses: [String], name: String?) {
        precondition(!addresses.isEmpty || name != nil, "a reappearance rule needs an address or a name")
        var unique: [String] = []
        for address in addresses.map({ $0.uppercased() }) where !unique.contains(address) { unique.append(address) }
        self.addresses = unique
        self.name = name
    }

    /// Whether a device heard at `address` (`nil` when the transport cannot see addresses)
    /// advertising `advertisedName` is the device.
    public func accepts(address: String?, advertisedName: String?) -> Bool {
        if let name, advertisedName != name { return false }
        if !addresses.isEmpty {
            guard let address else { return name != nil }
            return addresses.contains(address.uppercased())
        }
        return true
    }

    /// Whether `device` is the device.
    public func accepts(_ device: DiscoveredDevice) -> Bool {
        accepts(address: device.address, advertisedName: device.advertisement.name)
    }

    /// What choosing among the devices heard came to.
    public enum Selection: Sendable, Hashable {
        /// Exactly one device matches.
        case found(DiscoveredDevice)
        /// None matches.
        case none
        /// Several match, which means the rule cannot tell them apart: none is taken.
        case ambiguous([DiscoveredDevice])
    }

    /// Chooses the device among those heard (the latest report of each address and name
    /// counts).
    public func select(from heard: [DiscoveredDevice]) -> Selection {
        let matching = Self.latest(heard).filter(accepts)
        switch matching.count {
        case 0: return .none
        case 1: return .found(matching[0])
        default: return .ambiguous(matching)
        }
    }

    /// The one-line error when the device did not come back: the rule, and every candidate
    /// heard with its name, so that the person can see what was there instead.
    public func failure(heard: [DiscoveredDevice], after window: Duration) -> OTAError {
        let candidates = Self.latest(heard)
        if case .ambiguous(let matching) = select(from: heard) {
            return OTAError(
                .connectionFailed,
                "\(matching.count) devices match \(description) (\(Self.list(matching))); refusing to guess: switch the others off or move them away, then run the command again"
            )
        }
        let seen = candidates.isEmpty ? "nothing was heard" : "heard only \(Self.list(candidates))"
        return OTAError(
            .connectionFailed,
            "the device did not come back \(description) within \(window.humanReadable) (\(seen)); is it in range? Power-cycle it and run the command again"
        )
    }

    /// "at C0:FF:EE:00:00:10 or C0:FF:EE:00:00:11, advertising as Dfu3A9F1".
    public var description: String {
        var parts: [String] = []
        if !addresses.isEmpty { parts.append("at \(addresses.joined(separator: " or "))") }
        if let name { parts.append("advertising as \(name)") }
        return parts.joined(separator: ", ")
    }

    /// The latest report of each address and name, in the order first heard: two devices heard
    /// at one address (a neighbour at the address this device's bootloader takes) stay two.
    private static func latest(_ heard: [DiscoveredDevice]) -> [DiscoveredDevice] {
        var order: [String] = []
        var byKey: [String: DiscoveredDevice] = [:]
        for device in heard {
            let key = device.address.uppercased() + "\u{0}" + (device.advertisement.name ?? "")
            if byKey[key] == nil { order.append(key) }
            byKey[key] = device
        }
        return order.compactMap { byKey[$0] }
    }

    private static func list(_ devices: [DiscoveredDevice]) -> String {
        devices.map { "\($0.address) '\($0.advertisement.name ?? "unnamed")'" }.joined(separator: ", ")
    }
}
