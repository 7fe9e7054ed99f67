import Foundation

/// A kind of device that updates one way: how to recognise it from its advertisement, and which
/// protocol, with which parameters, updates it. One entry of a ``DeviceCatalog``.
public struct DeviceFamily: Sendable, Hashable {
    /// How a family is recognised. Every criterion given must hold; at least one is required.
    public struct Match: Sendable, Hashable {
        /// A pattern the advertised name must match (`*`, `?`).
        public var namePattern: GlobPattern?
        /// Service UUIDs that must all be advertised.
        public var services: [GATTUUID]
        /// Manufacturer data that must be present: a company identifier and, optionally, the
        /// bytes it must start with.
        public var manufacturer: (companyID: UInt16, prefix: Data)?

        /// Creates a match.
        public init(namePattern: GlobPattern? = nil, services: [GATTUUID] = [], manufacturer: (companyID: UInt16, prefix: Data)? = nil) {
            self.namePattern = namePattern
            self.services = services
            self.manufacturer = manufacturer
        }

        /// Whether `advertisement` satisfies every criterion.
        public func matches(_ advertisement: Advertisement) -> Bool {
            if let namePattern {
                guard let name = advertisement.name, namePattern.matches(name) else { return false }
            }
            if !services.allSatisfy(advertisement.serviceUUIDs.contains) { return false }
            if let manufacturer {
                guard let data = advertisement.manufacturerData[manufacturer.companyID], data.starts(with: manufacturer.prefix) else {
                    return false
                }
            }
            return true
        }

        /// The criteria in words ("name matches 'ACME-*', advertises 4f544100-…").
        public var explanation: String {
            var parts: [String] = []
            if let namePattern { parts.append("name matches '\(namePattern)'") }
            if !services.isEmpty { parts.append("advertises " + services.map(\.description).joined(separator: ", ")) }
            if let manufacturer {
                let prefix = Hex.bytes(manufacturer.prefix)
                parts.append("manufacturer \(Hex.number(manufacturer.companyID))" + (prefix.isEmpty ? "" : " data \(prefix)…"))
            }
            return parts.joined(separator: ", ")
        }

        public static func == (lhs: Match, rhs: Match) -> Bool {
            lhs.namePattern == rhs.namePattern && lhs.services == rhs.services
                && lhs.manufacturer?.companyID == rhs.manufacturer?.companyID && lhs.manufacturer?.prefix == rhs.manufacturer?.prefix
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(namePattern)
            hasher.combine(services)
            hasher.combine(manufacturer?.companyID)
            hasher.combine(manufacturer?.prefix)
        }
    }

    /// The family's name, unique across all catalogs in use.
    public var name: String
    /// A line about the family.
    public var summary: String?
    /// How to recognise it.
    public var match: Match
    /// The protocol that updates it.
    public var protocolName: String
    /// That protocol's parameters (UUIDs, batch size, receipt interval, object size, …).
    public var parameters: ProtocolParameters
    /// The hardware revision of this family, checked against a package's compatibility list.
    public var hardware: String?
    /// The ATT MTU to offer, when the family prefers one.
    public var preferredMTU: Int?
    /// The battery level, 0–100 %, below which an update is refused before its first write
    /// (catalog `minBattery`); `nil` checks none.
    public var minimumBattery: Int?
    /// Engine settings for this family (timeouts, resume policy); `nil` leaves the defaults.
    public var configuration: UpdateConfiguration?
    /// Where the family was defined, for messages ("catalog.json").
    public var source: String
    /// Public-key files (PEM) the family's firmware must be signed with (catalog `keys`), as
    /// written: relative paths are relative to ``source``'s folder. Empty checks no signature.
    public var keys: [String] = []

    /// The pairing its DFU characteristics need (catalog `pairing`): a transport that can pair
    /// pairs before the first write, unless the command line says otherwise; `nil` for none.
    public var pairing: LinkPairing?

    /// ``keys`` as files, relative paths resolved against the catalog's folder.
    public var keyFiles: [URL] {
        let folder = URL(fileURLWithPath: source).deletingLastPathComponent()
        return keys.map { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : folder.appendingPathComponent($0) }
    }

    /// Creates a family.
    public init(
        name: String,
        summary: String? = nil,
        match: Match,
        protocolName: String,
        parameters: ProtocolParameters = [:],
        hardware: String? = nil,
        preferredMTU: Int? = nil,
        configuration: UpdateConfiguration? = nil,
        minimumBattery: Int? = nil,
        source: String
    ) {
        self.name = name
        self.summary = summary
        self.match = match
        self.protocolName = protocolName
        self.parameters = parameters
        self.hardware = hardware
        self.preferredMTU = preferredMTU
        self.configuration = configuration
        self.minimumBattery = minimumBattery
        self.source = source
    }
}
