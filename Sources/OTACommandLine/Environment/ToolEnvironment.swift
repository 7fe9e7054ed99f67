import Foundation
import OTACore

/// What a build of the tool knows: the protocols it links, the catalogs it ships, and the
/// simulated devices it offers. `ota` uses ``standard``; an app that adds a vendor protocol
/// registers its descriptor and runs the same commands with it, without touching OTACore. The
/// built-in catalog and the simulated fleet start from the registered descriptors' default
/// families and demo devices.
public struct ToolEnvironment: Sendable {
    /// The linked protocols.
    public var registry: ProtocolRegistry
    /// Catalogs built into the tool beyond the registered protocols' default families, as
    /// (source name, JSON text).
    public var builtInCatalogs: [(source: String, json: String)]
    /// Simulated devices beyond the registered protocols' demo devices.
    public var additionalFleet: [SimulatedFleetDevice]
    /// The simulated devices `ota scan` finds and `--device sim:NAME` reaches: the registered
    /// protocols' demo devices, then ``additionalFleet``.
    public var fleet: [SimulatedFleetDevice] { SimulatedFleetDevice.demoFleet(of: registry) + additionalFleet }
    /// Where a user's own catalog lives when present (loaded after the built-in ones).
    public var userCatalogPath: URL?

    /// Creates an environment; `builtInCatalogs` and `additionalFleet` add to what `registry`'s
    /// descriptors bring.
    public init(
        registry: ProtocolRegistry,
        builtInCatalogs: [(source: String, json: String)] = [],
        additionalFleet: [SimulatedFleetDevice] = [],
        userCatalogPath: URL? = ToolEnvironment.conventionalCatalogPath
    ) {
        self.registry = registry
        self.builtInCatalogs = builtInCatalogs
        self.additionalFleet = additionalFleet
        self.userCatalogPath = userCatalogPath
    }

    /// `$XDG_CONFIG_HOME/ota/catalog.json`, or `~/.config/ota/catalog.json`.
    public static var conventionalCatalogPath: URL? {
        let environment = ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
            return URL(fileURLWithPath: config).appendingPathComponent("ota/catalog.json")
        }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return URL(fileURLWithPath: home).appendingPathComponent(".config/ota/catalog.json")
    }

    /// The protocols, catalog and simulated fleet of the `ota` tool.
    public static var standard: ToolEnvironment {
        ToolEnvironment(registry: BuiltInProtocols.registry)
    }

    /// The registered protocols' default families, the other built-in catalogs, the user's
    /// catalog if present, then `extra` files, merged.
    func catalog(adding extra: [String]) throws(OTAError) -> DeviceCatalog {
        var catalog = try BuiltInCatalog.catalog(for: registry)
        for (source, json) in builtInCatalogs {
            catalog = try catalog.merging(try DeviceCatalog.parse(Data(json.utf8), source: source, registry: registry))
        }
        if let userCatalogPath, FileManager.default.fileExists(atPath: userCatalogPath.path) {
            catalog = try catalog.merging(try DeviceCatalog.load(userCatalogPath, registry: registry))
        }
        for path in extra {
            catalog = try catalog.merging(try DeviceCatalog.load(URL(fileURLWithPath: path), registry: registry))
        }
        return catalog
    }
}
