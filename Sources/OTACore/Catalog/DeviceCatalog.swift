import Foundation

/// Device families, from one or more JSON catalogs: which protocol, with which parameters,
/// updates a device recognised by its advertisement. The schema is in docs/manifest.md.
///
/// Catalogs merge, or one overrides another (``overridden(by:)``: a user's catalog over the
/// built-in one). A family name defined twice is an error; a device that two families of the
/// same precedence match is an error that names both sources — the catalog never guesses — while
/// a family of higher precedence wins over those below it.
public struct DeviceCatalog: Sendable {
    /// The families, in the order they were defined.
    public private(set) var families: [DeviceFamily]

    /// Each family's precedence by name (absent: 0); a match of higher precedence wins.
    private var precedence: [String: Int] = [:]

    /// A catalog of `families`.
    public init(families: [DeviceFamily] = []) {
        self.families = families
    }

    /// The default family of every protocol in `registry` that declares one, in registration
    /// order, as defined in `source`: an app's built-in catalog, with no protocol named twice.
    ///
    /// - Throws: ``OTAError/Code/invalidManifest`` when a default family's parameters do not
    ///   suit its protocol, or two protocols declare families of the same name.
    public init(defaultsOf registry: ProtocolRegistry, source: String) throws(OTAError) {
        var catalog = DeviceCatalog()
        for descriptor in registry.inRegistrationOrder {
            guard let family = descriptor.defaultDeviceFamily(source: source) else { continue }
            do {
                _ = try descriptor.makeClient(family.parameters)
            } catch {
                throw OTAError(.invalidManifest, "\(source): family '\(family.name)' of protocol '\(descriptor.name)': \(error.message)")
            }
            catalog = try catalog.merging(DeviceCatalog(families: [family]))
        }
        self = catalog
    }

    /// The most families a catalog may define (docs/manifest.md).
    public static let maximumFamilies = 10_000

    /// The largest catalog file ``load(_:registry:)`` reads, in bytes (docs/manifest.md).
    public static let maximumFileSize = 4 << 20

    /// Parses a catalog file's contents, checking every family's protocol and parameters against
    /// `registry`. Time and memory grow linearly with the number of families.
    ///
    /// - Throws: ``OTAError/Code/invalidManifest`` naming `source` and the field.
    public static func parse(_ data: Data, source: String, registry: ProtocolRegistry) throws(OTAError) -> DeviceCatalog {
        let root = try ManifestReader(source: source).root(data)
        try root.allowOnly(["catalog", "families"])
        guard try root.required("catalog").integer(in: 1...1000) == 1 else {
            throw OTAError(.invalidManifest, "\(source): catalog: unsupported version (this build reads version 1)")
        }
        var catalog = DeviceCatalog()
        let familiesNode = try root.required("families")
        let nodes = try familiesNode.array()
        guard nodes.count <= maximumFamilies else {
            throw familiesNode.error("\(nodes.count) families, more than the \(maximumFamilies) a catalog may hold")
        }
        catalog.families.reserveCapacity(nodes.count)
        var names = Set<String>()
        for node in nodes {
            let family = try parseFamily(node, source: source, registry: registry)
            guard names.insert(family.name).inserted else {
                throw OTAError(.invalidManifest, "\(source): \(node.path).name: family '\(MessageText.name(family.name))' is already defined in \(source)")
            }
            catalog.families.append(family)
        }
        return catalog
    }

    /// Loads a catalog file.
    public static func load(_ url: URL, registry: ProtocolRegistry) throws(OTAError) -> DeviceCatalog {
        let data = try BoundedFileRead.contents(
            of: url, limit: maximumFileSize, code: .invalidManifest, subject: MessageText.name(url.path), largest: "the \(maximumFileSize) a catalog may have")
        return try parse(data, source: url.path, registry: registry)
    }

    /// This catalog followed by `other`.
    ///
    /// - Throws: ``OTAError/Code/invalidManifest`` when both define a family of the same name.
    public func merging(_ other: DeviceCatalog) throws(OTAError) -> DeviceCatalog {
        var merged = self
        var sources = Dictionary(families.map { ($0.name, $0.source) }, uniquingKeysWith: { first, _ in first })
        for family in other.families {
            if let twinSource = sources[family.name] {
                throw OTAError(
                    .invalidManifest,
                    "family '\(family.name)' is defined in both \(twinSource) and \(family.source); rename one or drop a catalog"
                )
            }
            sources[family.name] = family.source
            merged.families.append(family)
            merged.precedence[family.name] = other.precedence[family.name]
        }
        return merged
    }

    /// This catalog with `other`'s families taking precedence: a device that families of both
    /// match gets `other`'s (docs/decisions/0016-catalog-precedence.md). Within `other`, the order
    /// of its own precedence stays.
    ///
    /// - Throws: ``OTAError/Code/invalidManifest`` when both define a family of the same name.
    public func overridden(by other: DeviceCatalog) throws(OTAError) -> DeviceCatalog {
        var raised = other
        let base = (precedence.values.max() ?? 0) + 1
        for family in other.families { raised.precedence[family.name] = base + (other.precedence[family.name] ?? 0) }
        return try merging(raised)
    }

    /// The family whose match criteria `advertisement` satisfies, or `nil` when none does.
    ///
    /// - Throws: ``OTAError/Code/selectionFailed`` when more than one family matches.
    public func family(for advertisement: Advertisement, device: String) throws(OTAError) -> DeviceFamily? {
        let candidates = families.filter { $0.match.matches(advertisement) }
        let top = candidates.map { precedence[$0.name] ?? 0 }.max()
        let matches = candidates.filter { precedence[$0.name] ?? 0 == top }
        guard matches.count <= 1 else {
            let names = matches.map { "'\($0.name)' (\($0.source))" }.joined(separator: " and ")
            throw OTAError(.selectionFailed, "\(device) matches \(matches.count) device families: \(names); make their match rules exclusive")
        }
        return matches.first
    }

    private static func parseFamily(_ node: ManifestReader.Node, source: String, registry: ProtocolRegistry) throws(OTAError) -> DeviceFamily {
        try node.allowOnly([
            "name", "summary", "match", "protocol", "parameters", "hardware", "mtu", "maxChunk", "timeouts", "resume", "minBattery", "keys", "pairing",
        ])
        let name = try node.required("name").nonEmptyString()
        let match = try parseMatch(try node.required("match"))
        let protocolNode = try node.required("protocol")
        let protocolName = try protocolNode.nonEmptyString()
        let descriptor: ProtocolDescriptor
        do {
            descriptor = try registry.descriptor(named: protocolName)
        } catch {
            throw OTAError(.invalidManifest, "\(source): \(protocolNode.path): \(error.message)")
        }
        var parameters = ProtocolParameters()
        if let parametersNode = try node.optional("parameters") {
            for (key, value) in try parametersNode.members() { parameters[key] = try value.scalarText() }
            do {
                _ = try descriptor.makeClient(parameters)
            } catch {
                throw OTAError(.invalidManifest, "\(source): \(parametersNode.path): \(error.message)")
            }
        }
        var configuration: UpdateConfiguration?
        if let maxChunk = try node.optional("maxChunk") {
            var settings = UpdateConfiguration()
            settings.maximumChunkSize = try maxChunk.integer(in: 1...512)
            configuration = settings
        }
        if let timeouts = try node.optional("timeouts") {
            try timeouts.allowOnly(["connect", "response", "verify", "stall"])
            var settings = configuration ?? UpdateConfiguration()
            if let value = try timeouts.optional("connect") { settings.connectTimeout = try value.seconds() }
            if let value = try timeouts.optional("response") { settings.responseTimeout = try value.seconds() }
            if let value = try timeouts.optional("verify") { settings.verifyTimeout = try value.seconds() }
            if let value = try timeouts.optional("stall") { settings.stallTimeout = try value.seconds() }
            configuration = settings
        }
        if let resume = try node.optional("resume") {
            try resume.allowOnly(["attempts", "initialDelay", "maxDelay"])
            var settings = configuration ?? UpdateConfiguration()
            if let value = try resume.optional("attempts") { settings.resume.maximumAttempts = try value.integer(in: 0...100) }
            if let value = try resume.optional("initialDelay") { settings.resume.initialDelay = try value.seconds() }
            if let value = try resume.optional("maxDelay") { settings.resume.maximumDelay = try value.seconds() }
            configuration = settings
        }
        var family = DeviceFamily(
            name: name,
            summary: try node.optional("summary")?.string(),
            match: match,
            protocolName: protocolName,
            parameters: parameters,
            hardware: try node.optional("hardware")?.nonEmptyString(),
            preferredMTU: try node.optional("mtu")?.integer(in: 23...517),
            configuration: configuration,
            minimumBattery: try node.optional("minBattery")?.integer(in: 0...100),
            source: source
        )
        if let keys = try node.optional("keys") {
            family.keys = try keys.array().map { node throws(OTAError) in try node.nonEmptyString() }
        }
        if let pairing = try node.optional("pairing") {
            family.pairing = try parsePairing(pairing, family: name, source: source)
        }
        return family
    }

    /// `"pairing": {"passkey": "123456", "keepBond": true}`: pair before the update, with that
    /// passkey (or Just Works, or one asked at the terminal), and remove the bond afterwards
    /// unless `keepBond`.
    private static func parsePairing(_ node: ManifestReader.Node, family: String, source: String) throws(OTAError) -> LinkPairing {
        try node.allowOnly(["passkey", "keepBond"])
        var pairing = LinkPairing(removesBondAfterwards: true, source: "catalog family '\(family)'")
        if let passkeyNode = try node.optional("passkey") {
            let text = try passkeyNode.string()
            guard let passkey = LinkPairing.passkey(text) else {
                throw OTAError(.invalidManifest, "\(source): \(passkeyNode.path): '\(text)' is not a passkey of six digits (000000...999999)")
            }
            pairing.passkey = passkey
        }
        if let keep = try node.optional("keepBond") { pairing.removesBondAfterwards = !(try keep.bool()) }
        return pairing
    }

    private static func parseMatch(_ node: ManifestReader.Node) throws(OTAError) -> DeviceFamily.Match {
        try node.allowOnly(["name", "services", "manufacturer"])
        var match = DeviceFamily.Match()
        if let name = try node.optional("name") { match.namePattern = GlobPattern(try name.nonEmptyString()) }
        if let services = try node.optional("services") {
            match.services = try services.array().map { node throws(OTAError) in try node.uuid() }
        }
        if let manufacturer = try node.optional("manufacturer") {
            try manufacturer.allowOnly(["company", "prefix"])
            let companyNode = try manufacturer.required("company")
            var companyText = try companyNode.string()
            if companyText.hasPrefix("0x") || companyText.hasPrefix("0X") { companyText.removeFirst(2) }
            guard (1...4).contains(companyText.utf8.count), companyText.utf8.allSatisfy({ Hex.digitValue($0) != nil }),
                let company = UInt16(companyText, radix: 16)
            else {
                throw OTAError(.invalidManifest, "\(node.source): \(companyNode.path): expected a 16-bit company identifier such as \"0x0059\"")
            }
            match.manufacturer = (company, try manufacturer.optional("prefix")?.hexBytes() ?? Data())
        }
        guard match.namePattern != nil || !match.services.isEmpty || match.manufacturer != nil else {
            throw OTAError(.invalidManifest, "\(node.source): \(node.path): needs at least one of name, services, manufacturer (it would match every device)")
        }
        return match
    }
}
