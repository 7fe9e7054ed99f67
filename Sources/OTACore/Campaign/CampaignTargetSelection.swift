import Foundation

/// Which of the devices discovery found a campaign updates: catalog families, advertised-name
/// patterns, address patterns, an explicit list and a minimum signal strength.
///
/// Each kind of criterion given must hold (AND); within a kind, any entry will do (OR): families
/// `door-lock` and `thermostat` with name `*-eu` select the European locks and thermostats. A
/// selection with no criterion selects every device discovered. Applied once, at
/// `ota campaign create`; the plan keeps the criteria and why each device matched
/// (``CampaignSelectionRecord``).
///
/// ```swift
/// var selection = CampaignTargetSelection()
/// selection.families = ["door-lock"]
/// selection.minimumRSSI = -75
/// let result = try selection.select(from: try await scanner.listen(for: .seconds(5)), catalog: catalog)
/// ```
public struct CampaignTargetSelection: Sendable, Hashable {
    /// Catalog family names; a device must match one of them (``DeviceCatalog/family(for:device:)``).
    public var families: [String] = []
    /// Patterns the advertised name must match one of (`*`, `?`).
    public var namePatterns: [GlobPattern] = []
    /// Patterns the address must match one of (`*`, `?`), e.g. `C0:DE:00:00:*`.
    public var addressPatterns: [GlobPattern] = []
    /// Addresses or advertised names, one of which the device must be; `nil`: no list.
    public var list: [String]?
    /// Where ``list`` was read from, for messages ("fleet.txt").
    public var listSource: String?
    /// The weakest signal accepted, in dBm; a device heard with no RSSI does not satisfy it.
    public var minimumRSSI: Int?

    /// Selects every device discovered.
    public init() {}

    /// Whether no criterion is given.
    public var isEmpty: Bool {
        families.isEmpty && namePatterns.isEmpty && addressPatterns.isEmpty && list == nil && minimumRSSI == nil
    }

    /// The criteria in words, as the plan records them ("family door-lock; name 'lock-*'; RSSI ≥
    /// -70 dBm"), or "every device discovered".
    public var criteria: String {
        var parts: [String] = []
        if !families.isEmpty { parts.append("family " + families.joined(separator: " or ")) }
        if !namePatterns.isEmpty { parts.append("name " + namePatterns.map { "'\($0)'" }.joined(separator: " or ")) }
        if !addressPatterns.isEmpty { parts.append("address " + addressPatterns.map { "'\($0)'" }.joined(separator: " or ")) }
        if let list { parts.append("listed in \(listSource ?? "a list"), \(list.count) entr\(list.count == 1 ? "y" : "ies")") }
        if let minimumRSSI { parts.append("RSSI ≥ \(minimumRSSI) dBm") }
        return parts.isEmpty ? "every device discovered" : parts.joined(separator: "; ")
    }

    /// A name or address pattern, checked: not empty, and only `*` and `?` as wildcards (no
    /// `[…]` classes, no `{…}` alternatives, which ``GlobPattern`` would take literally).
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` naming `option`.
    public static func pattern(_ text: String, option: String) throws(OTAError) -> GlobPattern {
        guard !text.isEmpty else { throw OTAError(.invalidParameter, "\(option): an empty pattern matches nothing") }
        if let bad = text.first(where: { "[]{}".contains($0) }) {
            throw OTAError(
                .invalidParameter,
                "\(option) '\(MessageText.name(text))': '\(bad)' is not supported; patterns take * (any run) and ? (one character) only; give several \(option) for alternatives"
            )
        }
        return GlobPattern(text)
    }

    /// The entries of a list file's contents: one address or name a line; blank lines and lines
    /// starting with `#` are skipped, surrounding spaces trimmed.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a list with no entry.
    public static func listEntries(_ text: String, source: String) throws(OTAError) -> [String] {
        let entries = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty && !$0.hasPrefix("#")
        }
        guard !entries.isEmpty else { throw OTAError(.invalidParameter, "\(source) lists no device (one address or name a line)") }
        return entries
    }

    /// The devices of `discovered` that satisfy every criterion, in the order discovered, each
    /// with why it matched.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a family the catalog does not define;
    ///   ``OTAError/Code/selectionFailed`` when a family is asked for and a device matches two
    ///   families of the catalog, or when no device matches (the message says how many each
    ///   criterion kept).
    public func select(from discovered: [DiscoveredDevice], catalog: DeviceCatalog) throws(OTAError) -> CampaignSelection {
        let known = Set(catalog.families.map(\.name))
        for family in families where !known.contains(family) {
            throw OTAError(
                .invalidParameter,
                "no family '\(MessageText.name(family))' in the device catalog (it has \(catalog.families.map(\.name).joined(separator: ", ")))")
        }
        let devices = DiscoveredDevice.latestPerAddress(discovered)
        var kept: [(device: DiscoveredDevice, why: [String])] = devices.map { ($0, []) }
        // How many each criterion left, in order, for the message when nothing is left.
        var funnel: [String] = ["\(devices.count) discovered"]
        if !families.isEmpty {
            var next: [(DiscoveredDevice, [String])] = []
            for (device, why) in kept {
                guard let family = try catalog.family(for: device.advertisement, device: device.address), families.contains(family.name) else { continue }
                next.append((device, why + ["family \(family.name)"]))
            }
            kept = next
            funnel.append("\(kept.count) of family \(families.joined(separator: " or "))")
        }
        if !namePatterns.isEmpty {
            kept = kept.compactMap { device, why in
                guard let name = device.advertisement.name, let pattern = namePatterns.first(where: { $0.matches(name) }) else { return nil }
                return (device, why + ["name '\(MessageText.name(name))' matches '\(pattern)'"])
            }
            funnel.append("\(kept.count) named " + namePatterns.map { "'\($0)'" }.joined(separator: " or "))
        }
        if !addressPatterns.isEmpty {
            kept = kept.compactMap { device, why in
                guard let pattern = addressPatterns.first(where: { $0.matches(device.address) }) else { return nil }
                return (device, why + ["address matches '\(pattern)'"])
            }
            funnel.append("\(kept.count) at address " + addressPatterns.map { "'\($0)'" }.joined(separator: " or "))
        }
        var unheard: [String] = []
        if let list {
            let entries = Set(list)
            kept = kept.compactMap { device, why in
                if entries.contains(device.address) { return (device, why + ["listed"]) }
                if let name = device.advertisement.name, entries.contains(name) { return (device, why + ["listed by name"]) }
                return nil
            }
            let heard = Set(devices.flatMap { [$0.address] + ($0.advertisement.name.map { [$0] } ?? []) })
            unheard = list.filter { !heard.contains($0) }
            funnel.append("\(kept.count) listed in \(listSource ?? "the list")")
        }
        if let minimumRSSI {
            kept = kept.compactMap { device, why in
                guard let rssi = device.advertisement.rssi, rssi >= minimumRSSI else { return nil }
                return (device, why + ["\(rssi) dBm"])
            }
            funnel.append("\(kept.count) at \(minimumRSSI) dBm or stronger")
        }
        guard !kept.isEmpty else {
            throw OTAError(.selectionFailed, "no device matches the campaign's targets (\(criteria)): \(funnel.joined(separator: ", "))")
        }
        return CampaignSelection(
            devices: kept.map(\.device),
            record: CampaignSelectionRecord(
                criteria: criteria, discovered: devices.count,
                reasons: Dictionary(kept.map { ($0.device.address, $0.why.isEmpty ? "discovered" : $0.why.joined(separator: ", ")) }) { first, _ in first }),
            unheardListEntries: unheard)
    }
}

/// What a ``CampaignTargetSelection`` selected.
public struct CampaignSelection: Sendable, Hashable {
    /// The devices selected, in the order discovered.
    public var devices: [DiscoveredDevice]
    /// What the plan records of it.
    public var record: CampaignSelectionRecord
    /// Entries of the list that no discovered device has as address or name (not heard: out of
    /// range, off, or mistyped).
    public var unheardListEntries: [String]
}

/// What a campaign's plan keeps of how its devices were chosen: the criteria, how many devices
/// discovery found, and why each selected device matched.
public struct CampaignSelectionRecord: Sendable, Hashable {
    /// The criteria in words (``CampaignTargetSelection/criteria``).
    public var criteria: String
    /// Devices discovery found.
    public var discovered: Int
    /// Why each selected device matched, by address ("family door-lock, -61 dBm").
    public var reasons: [String: String]

    /// Describes a selection.
    public init(criteria: String, discovered: Int, reasons: [String: String]) {
        self.criteria = criteria
        self.discovered = discovered
        self.reasons = reasons
    }
}
