import Foundation
import OTACore
import OTAProtocolMCUmgr
import OTATransportSerial
import OTATransportUDP

#if canImport(OTATransportBlueZ)
import OTATransportBlueZ
#endif

/// What a build of the tool knows: the protocols it links, the catalogs it ships, the
/// simulated devices it offers and the transports that reach devices. `ota` uses ``standard``;
/// an app that adds a vendor protocol registers its descriptor and runs the same commands with
/// it, without touching OTACore. The built-in catalog and the simulated fleet start from the
/// registered descriptors' default families and demo devices.
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
    /// Transports an app adds, asked before the standard ones (so one of them may also take
    /// over an address form of a standard one, such as a BlueZ provider with its own settings).
    public var addedTransports: [any TransportProvider]
    /// The device `update` and `abort` use when `--device` is not given; `scan` lists its
    /// transport's devices unless `--transport` says otherwise.
    public var defaultDevice: String
    /// The wall clock `ota campaign` reads a campaign's window and a SQLite campaign's leases
    /// on (the system's by default); a test puts "now" anywhere with its own.
    public var campaignClock: any CampaignLeaseClock = WallLeaseClock()

    /// Creates an environment; `builtInCatalogs` and `additionalFleet` add to what `registry`'s
    /// descriptors bring.
    ///
    /// - Parameter addedTransports: transports asked before ``standardTransports(registry:fleet:)``.
    public init(
        registry: ProtocolRegistry,
        builtInCatalogs: [(source: String, json: String)] = [],
        additionalFleet: [SimulatedFleetDevice] = [],
        userCatalogPath: URL? = ToolEnvironment.conventionalCatalogPath,
        addedTransports: [any TransportProvider] = [],
        defaultDevice: String = ToolEnvironment.standardDefaultDevice
    ) {
        self.registry = registry
        self.builtInCatalogs = builtInCatalogs
        self.additionalFleet = additionalFleet
        self.userCatalogPath = userCatalogPath
        self.addedTransports = addedTransports
        self.defaultDevice = defaultDevice
    }

    /// `sim:esp32s3-mtu244-2m`, a bare simulated profile.
    public static var standardDefaultDevice: String { SimulatedTarget.defaultAddress }

    /// The transports: `--device ADDRESS` goes to the first that recognises the address. The
    /// added ones, then the standard ones for this environment's protocols and fleet as they are
    /// now (an app may still change ``registry`` and ``fleet`` after ``standard``).
    public var transports: TransportRegistry {
        TransportRegistry(addedTransports + Self.standardTransports(registry: registry, fleet: fleet).providers)
    }

    /// The transports `ota` registers: BlueZ where the build has it, the simulator serving
    /// `fleet` with the device models of `registry`, SMP over UDP (`udp:HOST[:PORT]`) and over
    /// serial lines (`serial:PATH`) when `registry` has MCUmgr. The one place the tool names transports.
    public static func standardTransports(registry: ProtocolRegistry, fleet: [SimulatedFleetDevice]) -> TransportRegistry {
        var providers: [any TransportProvider] = []
        #if canImport(OTATransportBlueZ)
        providers.append(BlueZTransportProvider())
        #endif
        providers.append(SimulatorTransportProvider(registry: registry, fleet: fleet))
        if registry.all.contains(where: { $0.name == MCUmgrProtocol.name }) {
            let profile = MCUmgrGATTProfile()
            providers.append(
                UDPTransportProvider(
                    protocolName: MCUmgrProtocol.name, characteristic: profile.smp, advertisedService: profile.smp.service,
                    packetLength: SMPHeader.messageLength(of:)))
            providers.append(
                SerialTransportProvider(
                    protocolName: MCUmgrProtocol.name, characteristic: profile.smp, advertisedService: profile.smp.service,
                    framing: MCUmgrSerial.framing))
        }
        return TransportRegistry(providers)
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

    /// The device at `address`, through the transport that recognises it, with the transport
    /// options of the command line. A bad address or option is a usage error of `command`.
    ///
    /// - Parameter askPerson: asks the person at the terminal (``TransportOptions/askPerson``).
    func device(
        _ address: String, arguments: ParsedArguments, interactive: Bool, command: String,
        askPerson: (@Sendable (String) async -> String?)? = nil
    ) async throws -> any TransportDevice {
        let options = TransportOptions(arguments.values, isInteractive: interactive, askPerson: askPerson)
        do throws(OTAError) {
            return try await transports.provider(for: address).device(at: address, options: options)
        } catch {
            guard error.code == .invalidParameter else { throw error }
            let usage = error.underlying as? UsageError
            throw UsageError(usage?.message ?? error.message, command: usage?.command ?? command)
        }
    }

    /// The catalog in use, in order of precedence (docs/decisions/0016-catalog-precedence.md):
    /// the `extra` files (`--catalog`), then the user's catalog if present, then the registered
    /// protocols' default families with the other built-in catalogs. A device matched at one
    /// level takes that level's family; two matches at the same level are an error.
    func catalog(adding extra: [String]) throws(OTAError) -> DeviceCatalog {
        var catalog = try BuiltInCatalog.catalog(for: registry)
        for (source, json) in builtInCatalogs {
            catalog = try catalog.merging(try DeviceCatalog.parse(Data(json.utf8), source: source, registry: registry))
        }
        if let userCatalogPath, FileManager.default.fileExists(atPath: userCatalogPath.path) {
            catalog = try catalog.overridden(by: try DeviceCatalog.load(userCatalogPath, registry: registry))
        }
        var extras = DeviceCatalog()
        for path in extra {
            extras = try extras.merging(try DeviceCatalog.load(URL(fileURLWithPath: path), registry: registry))
        }
        return try catalog.overridden(by: extras)
    }
}
