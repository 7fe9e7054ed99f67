#if os(Linux)
import Foundation
import OTACore
import Synchronization

/// Opens a ``BlueZTransport`` to one device by its address, through bluetoothd.
///
/// ```swift
/// let connector = BlueZConnector(address: "00:AA:01:01:00:01", adapter: "hci0")
/// let report = try await engine.update(image, using: protocol, connector: connector)
/// ```
///
/// ``connect()``:
/// 1. reads BlueZ's objects and picks the adapter (``BlueZAdapter/select(_:from:)``);
/// 2. when the adapter does not know the device yet, finds it: `Adapter1.ConnectDevice` when
///    ``Configuration/addressType`` is set and bluetoothd offers it (it needs `bluetoothd -E`
///    before 5.7x), otherwise LE discovery until the device is heard, for at most
///    ``Configuration/discoveryTimeout``;
/// 3. `Device1.Connect`, then waits for `ServicesResolved`;
/// 4. reads the GATT characteristics, acquires a socket (`AcquireWrite`) for each characteristic
///    that takes only writes without response, and derives the ``LinkParameters`` from the ATT
///    MTU: writes without response carry at most min(MTU − 3,
///    ``Configuration/writeWithoutResponseCap``), writes with response min(MTU − 3, 512).
///
/// - Note: Every step honours cancellation; the engine's connect timeout cancels it. A connection
///   attempt cut short is cancelled in bluetoothd with `Device1.Disconnect`.
/// - Important: Each ``connect()`` opens its own D-Bus connection, owned by the transport it
///   returns; ``BlueZTransport/disconnect()`` closes it.
public struct BlueZConnector: Connector {
    /// How the connector and its transports behave; every delay and limit is here.
    public struct Configuration: Sendable, Hashable {
        /// An LE address type, for `Adapter1.ConnectDevice`.
        public enum AddressType: String, Sendable, Hashable {
            /// A public device address.
            case `public`
            /// A random (static or private) device address.
            case random
        }

        /// The largest value of a write without response; default
        /// ``BlueZ/bluezPeerWriteWithoutResponseCap`` (510), which a BlueZ peripheral of 5.66's
        /// age needs. Use ``BlueZ/attributeValueCap`` (512) for other peers. Values are also
        /// capped at ATT MTU − 3.
        public var writeWithoutResponseCap = BlueZ.bluezPeerWriteWithoutResponseCap
        /// The send buffer (`SO_SNDBUF`) asked for on each `AcquireWrite` socket, in bytes, which
        /// bounds what a write can leave waiting in the socket for bluetoothd (default 4096;
        /// `nil` keeps the socket's own, `net.core.wmem_default`, usually 212 992). Linux doubles
        /// the request and raises it to a floor of about 4.6 kB: 4096 gives 8192, which holds at
        /// most seven 510-byte datagrams with the kernel's overhead. The size in force is in
        /// ``BlueZTransport/Statistics``.
        ///
        /// - Note: bluetoothd reads the socket as fast as it is written and queues the write
        ///   commands itself, so this bounds only the socket, not what waits below it (see
        ///   docs/transports/bluez.md).
        public var acquiredSocketSendBuffer: Int? = 4096
        /// The most bytes of writes without response that may be on their way to the device and not
        /// yet shown received by a *receipt* (default 16 384; `nil` turns receipts off). A receipt
        /// is a read of a Client Characteristic Configuration descriptor, which bluetoothd sends
        /// behind the write commands it queued, so its answer shows they reached the device
        /// (``DeliveryReceipts``, docs/decisions/0028): a write waits while this many bytes are
        /// unconfirmed, and progress runs at most this much plus one write ahead of the device.
        /// Raised to twice the largest write; not used when writes go as write requests (each is
        /// confirmed anyway) or when several ATT bearers may carry them (a receipt on another
        /// bearer would prove nothing).
        public var deliveryWindow: Int? = 16_384
        /// Whether writes without response go through `AcquireWrite` sockets (default); when
        /// `false`, `WriteValue(type: command)` is always used.
        public var usesAcquireWrite = true
        /// How writes without response keep their order when bluetoothd may spread them over
        /// several ATT bearers (EATT); default ``WriteOrdering/automatic``.
        public var writeOrdering = WriteOrdering.automatic
        /// bluetoothd's `[GATT] Channels`; `nil` (default) reads them from the running bluetoothd
        /// on every connect (``BluetoothdGATTSettings/current(version:processes:)``).
        public var bluetoothdSettings: BluetoothdGATTSettings?

        /// How writes without response travel when ATT bearers may reorder them.
        ///
        /// BlueZ 5.66 with EATT (its default `[GATT] Channels = 3`, and a device that offers
        /// EATT) hands each write command to whichever ATT bearer is free, so consecutive
        /// writes without response can reach the device out of order, through `AcquireWrite` and
        /// `WriteValue(type: command)` alike. Only a write request keeps order across bearers:
        /// the next one leaves after the device answered the last.
        public enum WriteOrdering: Sendable, Hashable {
            /// Write requests (`WriteValue(type: request)`, one at a time) when
            /// ``BlueZBearerAssessment`` says several bearers may carry the writes, write
            /// commands otherwise; the link summary says which and why.
            case automatic
            /// Always write commands, even when they may be reordered (the summary warns).
            case commands
            /// Always write requests.
            case requests
        }
        /// Whether and how to pair (issue 16, item 4; docs/decisions/0029).
        public var pairing = Pairing()

        /// Pairing with devices whose characteristics need an encrypted link.
        ///
        /// By default nothing is paired by the connector: a device that answers "insufficient
        /// encryption" makes bluetoothd pair through the system's default agent, if there is one,
        /// and otherwise the call fails with an error that says to pass `--pair` or `--passkey`.
        public struct Pairing: Sendable, Hashable {
            /// Pair with `Device1.Pair` after connecting, when the device is not paired yet, through
            /// this connection's own ``BlueZPairingAgent``.
            public var pairsFirst = false
            /// The passkey for Passkey Entry (0…999 999): the agent registers as `KeyboardOnly` and
            /// enters it; `nil` allows only Just Works (`NoInputNoOutput`).
            public var passkey: UInt32?
            /// Remove the bond (`Adapter1.RemoveDevice`) when the app closes the link, so the device
            /// is not left paired to this computer.
            public var removesBondAfterwards = false
            /// How long `Device1.Pair` may take (the person may be typing a passkey on the device).
            public var timeout: Duration = .seconds(60)

            /// No pairing by the connector.
            public init() {}
        }

        /// How long to scan for a device the adapter does not know yet.
        public var discoveryTimeout: Duration = .seconds(10)
        /// How long `Device1.Connect` may take.
        public var connectTimeout: Duration = .seconds(30)
        /// How long to wait for `ServicesResolved` once connected.
        public var servicesResolvedTimeout: Duration = .seconds(30)
        /// How long a GATT call (write with response, read, `StartNotify`, a fallback write
        /// without response) may take.
        public var callTimeout: Duration = .seconds(25)
        /// How long `Device1.Disconnect` may take when closing.
        public var disconnectTimeout: Duration = .seconds(5)
        /// The device's address type, when known: lets a device the adapter has not seen be
        /// connected with `Adapter1.ConnectDevice` instead of scanning for it.
        public var addressType: AddressType?

        /// The default configuration.
        public init() {}
    }

    /// The device address, upper case, such as `00:AA:01:01:00:01`.
    public let address: String
    /// The adapter to use (`hci0`, or its address); `nil` picks the first powered one.
    public let adapter: String?
    /// The bus bluetoothd is on: the system bus, or a test bus.
    public let bus: DBusConnection.Bus
    /// How the connector and its transports behave.
    public let configuration: Configuration
    private let clock: any Clock<Duration>
    /// Asks the person at the terminal for the passkey a device shows while pairing, when no
    /// ``Configuration/Pairing/passkey`` was given; `nil` when nobody can be asked.
    public let askPerson: (@Sendable (String) async -> String?)?

    /// Creates a connector for the device at `address`.
    ///
    /// - Parameters:
    ///   - address: the device address, such as `00:AA:01:01:00:01` (either case).
    ///   - adapter: the adapter name (`hci0`) or address; `nil` picks the first powered adapter.
    ///   - bus: where bluetoothd is; `.system` except in tests.
    ///   - configuration: timeouts and write limits.
    ///   - clock: the clock for ``Configuration/discoveryTimeout`` and
    ///     ``Configuration/servicesResolvedTimeout``.
    ///   - askPerson: asks for the passkey a device shows while pairing (``askPerson``).
    public init(
        address: String,
        adapter: String? = nil,
        bus: DBusConnection.Bus = .system,
        configuration: Configuration = Configuration(),
        clock: any Clock<Duration> = RealTimeClock(),
        askPerson: (@Sendable (String) async -> String?)? = nil
    ) {
        self.address = address.uppercased()
        self.adapter = adapter
        self.bus = bus
        self.configuration = configuration
        self.clock = clock
        self.askPerson = askPerson
    }

    /// This connector pairing as `pairing` says (a catalog family's): first, with its passkey if
    /// it has one, removing the bond afterwards if it says so.
    public func pairing(as pairing: LinkPairing) -> BlueZConnector {
        var configuration = configuration
        configuration.pairing.pairsFirst = true
        configuration.pairing.passkey = pairing.passkey ?? configuration.pairing.passkey
        configuration.pairing.removesBondAfterwards = pairing.removesBondAfterwards
        return BlueZConnector(address: address, adapter: adapter, bus: bus, configuration: configuration, clock: clock, askPerson: askPerson)
    }

    /// "00:AA:01:01:00:01", followed by " via hci1" when an adapter was chosen.
    public var deviceDescription: String {
        adapter.map { "\(address) via \($0)" } ?? address
    }

    public func connect() async throws(TransportError) -> any Transport {
        try await connectTransport()
    }

    /// The device address: what a bootloader's address is derived from.
    public var airAddress: String? { address }

    /// Scans (``BlueZScanner``, every LE device) until exactly one device the rule accepts is
    /// heard, by its address and its advertised name, and returns a connector to it on the same
    /// adapter with the same configuration. Devices connected to this host are not candidates;
    /// nothing is taken on its name alone when the rule names addresses, nor on its address
    /// alone when it names a name.
    ///
    /// - Throws: ``OTAError/Code/connectionFailed`` naming the rule and every device heard
    ///   (``ReappearanceRule/failure(heard:after:)``) when none matches within `window`, or
    ///   several do; discovery's own failures (bluetoothd not running, adapter off) as they are.
    public func reappeared(matching rule: ReappearanceRule, within window: Duration) async throws(OTAError) -> any Connector {
        let scanner = BlueZScanner(adapter: adapter, bus: bus, stopTimeout: configuration.disconnectTimeout)
        let discoveries: AsyncThrowingStream<BlueZScanner.Discovery, any Error>
        do {
            discoveries = try await scanner.discoveries()
        } catch {
            throw OTAError.wrapping(error, context: "looking for the device \(rule.description)")
        }
        let heard = Mutex<[DiscoveredDevice]>([])
        let found: String?
        do {
            found = try await withTimeout(
                window, clock: clock, timeoutError: OTAError(.timeout, "looking for the device \(rule.description)")
            ) { () async throws -> String? in
                for try await discovery in discoveries where !discovery.isConnected {
                    let candidates = heard.withLock { heard in
                        heard.append(DiscoveredDevice(address: discovery.address, advertisement: discovery.advertisement))
                        return heard
                    }
                    switch Self.choose(rule, among: candidates) {
                    case .found(let device): return device.address
                    case .ambiguous: throw rule.failure(heard: candidates, after: window)
                    case .none: continue
                    }
                }
                return nil
            }
        } catch let error as OTAError where error.code != .timeout {
            throw error
        } catch let error as TransportError {
            throw OTAError.wrapping(error, context: "looking for the device \(rule.description)")
        } catch {
            if Task.isCancelled { throw OTAError(.cancelled, "cancelled while looking for the device \(rule.description)") }
            found = nil
        }
        guard let found else { throw rule.failure(heard: heard.withLock { $0 }, after: window) }
        return BlueZConnector(address: found, adapter: adapter, bus: bus, configuration: configuration, clock: clock)
    }

    /// The rule's choice among what discovery reported so far: BlueZ reports a device again
    /// whenever its advertisement changes, so only the latest report of each address counts (a
    /// device known by its application's name that now advertises its bootloader's is one
    /// candidate, under its new name).
    static func choose(_ rule: ReappearanceRule, among heard: [DiscoveredDevice]) -> ReappearanceRule.Selection {
        rule.select(from: DiscoveredDevice.latestPerAddress(heard))
    }

    /// Connects and returns the concrete transport (for its ``BlueZTransport/writePaths`` and
    /// ``BlueZTransport/statistics``).
    ///
    /// - Throws: ``TransportError``: `.connectionFailed` with a one-line cause and fix (bluetoothd
    ///   not running, no or unknown adapter, adapter off, device not found, connection refused),
    ///   `.other` when cancelled.
    public func connectTransport() async throws(TransportError) -> BlueZTransport {
        guard BlueZ.isValidAddress(address) else { throw BlueZFailure.invalidAddress(address) }
        return try await BlueZSession.open(bus, handingTo: establish(over:))
    }

    // MARK: - Steps

    private func establish(over session: BlueZSession) async throws(TransportError) -> BlueZTransport {
        let tree = try await session.objectTree()
        let adapter = try BlueZAdapter.select(self.adapter, from: tree.adapters)
        // Subscribe before anything happens, so that no change is missed.
        let removed = try await session.signals(BlueZSignals.interfacesRemoved, session.context("watching \(address)"))
        let owner = try await session.signals(BlueZSignals.ownerChanged, session.context("watching bluetoothd"))

        var device = tree.device(address: address, adapter: adapter.path)
        if device == nil { device = try await find(over: session, adapter: adapter) }
        guard let device else {
            throw BlueZFailure.deviceNotFound(address, adapter: adapter.name, after: configuration.discoveryTimeout)
        }

        let deviceSignals = try await session.signals(
            BlueZSignals.everything(below: device.path), session.context("watching \(address)"))
        let wasConnected = device.isConnected
        let baseline: UInt32
        do {
            try await connectDevice(device, over: session)
            baseline = try await waitForServices(device, over: session, signals: deviceSignals)
            try await pairIfAsked(device, adapter: adapter, over: session)
        } catch {
            if !wasConnected {
                await session.callDetached(
                    device.path, BlueZ.Interface.device, "Disconnect", timeout: configuration.disconnectTimeout)
            }
            throw error
        }
        do {
            return try await makeTransport(
                device: device, adapter: adapter, over: session,
                signals: BlueZTransport.Signals(device: deviceSignals, removed: removed, owner: owner),
                baseline: baseline)
        } catch {
            await session.callDetached(
                device.path, BlueZ.Interface.device, "Disconnect", timeout: configuration.disconnectTimeout)
            throw error
        }
    }

    /// Pairs with `Device1.Pair` through this session's own agent when the configuration asks and
    /// BlueZ does not have the device paired yet.
    private func pairIfAsked(
        _ device: BlueZObjectTree.Device, adapter: BlueZAdapter, over session: BlueZSession
    ) async throws(TransportError) {
        let pairing = configuration.pairing
        guard pairing.pairsFirst || pairing.passkey != nil else { return }
        let context = session.context("pairing with \(address)", address: address, connecting: true, timeout: pairing.timeout)
        let properties = try await session.properties(of: BlueZ.Interface.device, at: device.path, context)
        guard properties["Paired"]?.bool != true else { return }
        let agent = BlueZPairingAgent(
            path: Self.agentPath, adapterPath: adapter.path, passkey: pairing.passkey, asksPerson: pairing.passkey == nil && askPerson != nil)
        do {
            try await agent.register(on: session.connection, asDefault: false, askPerson: askPerson)
        } catch {
            throw BlueZFailure.translate(error, session.context("registering a pairing agent with bluetoothd", address: address, connecting: true))
        }
        // AlreadyExists: paired meanwhile (by the system's agent, say).
        _ = try await session.call(
            device.path, BlueZ.Interface.device, "Pair", timeout: pairing.timeout,
            tolerating: ["org.bluez.Error.AlreadyExists"], context)
    }

    /// Where a connection's pairing agent is exported (bluetoothd tells agents apart by their
    /// connection, so one path serves every connection).
    static let agentPath: DBusObjectPath = "/org/swiftbleota/agent"

    /// Finds a device the adapter does not know: `ConnectDevice` when possible, else discovery.
    private func find(
        over session: BlueZSession, adapter: BlueZAdapter
    ) async throws(TransportError) -> BlueZObjectTree
        .Device?
    {
        if let addressType = configuration.addressType {
            let reply = try await session.call(
                adapter.path, BlueZ.Interface.adapter, "ConnectDevice",
                [.variantDictionary(["Address": .string(address), "AddressType": .string(addressType.rawValue)])],
                timeout: configuration.connectTimeout,
                tolerating: [DBusError.Name.unknownMethod.rawValue, "org.bluez.Error.NotSupported"],
                session.context("connecting to \(address)", address: address, connecting: true))
            if let path = reply?.arguments.first?.objectPath {
                let properties = try await session.properties(
                    of: BlueZ.Interface.device, at: path, session.context("reading \(address)", address: address))
                if let device = BlueZObjectTree.Device(path: path, properties: properties) { return device }
            }
        }
        return try await discover(over: session, adapter: adapter)
    }

    /// Scans until the device is heard, for at most the discovery timeout.
    private func discover(
        over session: BlueZSession, adapter: BlueZAdapter
    ) async throws(TransportError)
        -> BlueZObjectTree.Device?
    {
        let added = try await session.signals(BlueZSignals.interfacesAdded, session.context("scanning for \(address)"))
        let scanning = session.context("scanning for \(address) on \(adapter.name)", address: address)
        _ = try await session.call(
            adapter.path, BlueZ.Interface.adapter, "SetDiscoveryFilter",
            [.variantDictionary(["Transport": .string("le"), "Pattern": .string(address)])],
            tolerating: ["org.bluez.Error.NotSupported", "org.bluez.Error.InvalidArguments"], scanning)
        let address = address
        let found: BlueZObjectTree.Device?
        do {
            // From here on discovery may be running, even when the call is cut short: stop it.
            _ = try await session.call(
                adapter.path, BlueZ.Interface.adapter, "StartDiscovery", tolerating: ["org.bluez.Error.InProgress"],
                scanning)
            // It may have been heard between reading the objects and starting discovery.
            if let known = try await session.objectTree().device(address: address, adapter: adapter.path) {
                found = known
            } else {
                // Running out of time (or being cancelled) leaves it not found.
                found =
                    try? await withTimeout(
                        configuration.discoveryTimeout, clock: clock, timeoutError: OTAError(.timeout, "scanning")
                    ) { () -> BlueZObjectTree.Device? in
                        for await signal in added {
                            guard let (path, interfaces) = BlueZSignals.added(signal),
                                adapter.path.isAncestor(of: path),
                                let properties = interfaces[BlueZ.Interface.device],
                                let device = BlueZObjectTree.Device(path: path, properties: properties),
                                device.address == address
                            else { continue }
                            return device
                        }
                        return nil
                    }
            }
        } catch {
            await session.callDetached(
                adapter.path, BlueZ.Interface.adapter, "StopDiscovery", timeout: configuration.disconnectTimeout)
            throw error
        }
        await session.callDetached(
            adapter.path, BlueZ.Interface.adapter, "StopDiscovery", timeout: configuration.disconnectTimeout)
        if found == nil, Task.isCancelled { throw BlueZFailure.cancelled("scanning for \(address)") }
        return found
    }

    private func connectDevice(
        _ device: BlueZObjectTree.Device, over session: BlueZSession
    )
        async throws(TransportError)
    {
        // AlreadyConnected: fine. InProgress: another client is connecting it; wait for the result.
        _ = try await session.call(
            device.path, BlueZ.Interface.device, "Connect", timeout: configuration.connectTimeout,
            tolerating: ["org.bluez.Error.AlreadyConnected", "org.bluez.Error.InProgress"],
            session.context("connecting to \(address)", address: address, connecting: true))
    }

    /// Waits until BlueZ has resolved the device's services; returns the serial from which
    /// device signals are current.
    private func waitForServices(
        _ device: BlueZObjectTree.Device,
        over session: BlueZSession,
        signals: AsyncStream<DBusMessage>
    ) async throws(TransportError) -> UInt32 {
        let context = session.context("connecting to \(address)", address: address, connecting: true)
        let reply = try await session.call(
            device.path, BlueZ.Interface.properties, "GetAll", [.string(BlueZ.Interface.device)], context)
        let properties = reply.arguments.first?.variantDictionary ?? [:]
        if properties["ServicesResolved"]?.bool == true { return reply.serial }
        let path = device.path
        let address = address
        enum Outcome: Sendable { case resolved(UInt32), disconnected, signalsEnded }
        let outcome: Outcome?
        do {
            outcome = try await withTimeout(
                configuration.servicesResolvedTimeout, clock: clock,
                timeoutError: OTAError(.timeout, "resolving services")
            ) { () -> Outcome in
                for await signal in signals where signal.path == path {
                    guard let (interface, changed, _) = BlueZSignals.changed(signal),
                        interface == BlueZ.Interface.device
                    else { continue }
                    if changed["ServicesResolved"]?.bool == true { return .resolved(max(signal.serial, reply.serial)) }
                    if changed["Connected"]?.bool == false, signal.serial > reply.serial { return .disconnected }
                }
                return .signalsEnded
            }
        } catch {
            outcome = nil  // the time ran out, or the task was cancelled
        }
        switch outcome {
        case .resolved(let serial):
            return serial
        case .disconnected:
            throw TransportError(
                .connectionFailed,
                "\(address) disconnected while its services were being discovered: move it closer and try again")
        case .signalsEnded:
            throw TransportError(
                .connectionFailed, "connecting to \(address): the D-Bus connection to bluetoothd was lost")
        case .none:
            if Task.isCancelled { throw BlueZFailure.cancelled("connecting to \(address)") }
            throw TransportError(
                .connectionFailed,
                "connected to \(address) but its GATT services were not resolved within \(configuration.servicesResolvedTimeout.humanReadable): disconnect it ('bluetoothctl disconnect \(address)') and try again"
            )
        }
    }

    private func makeTransport(
        device: BlueZObjectTree.Device,
        adapter: BlueZAdapter,
        over session: BlueZSession,
        signals: BlueZTransport.Signals,
        baseline: UInt32
    ) async throws(TransportError) -> BlueZTransport {
        let tree = try await session.objectTree()
        let gatt = tree.gattCharacteristics(of: device.path)
        let bearers = await assessBearers(gatt, over: session)
        var writes = try await settleWrites(of: gatt, adapter: adapter, bearers: bearers, over: session)
        let receipts = deliveryReceipts(
            for: writes, descriptors: tree.clientConfigurationDescriptors(of: device.path), bearers: bearers)
        writes.receipts = receipts.plan
        let note =
            receipts.plan?.summary
            ?? receipts.offBecause.map {
                "no delivery receipts (\($0)): progress counts what bluetoothd queued, not what the device received"
            }
        if let note { writes.link.summary = [writes.link.summary, note].compactMap { $0 }.joined(separator: ", ") }
        return BlueZTransport(
            session: session, address: address, adapter: adapter.name, devicePath: device.path, gatt: gatt,
            writes: writes, configuration: configuration, signals: signals, baselineSerial: baseline, clock: clock)
    }

    /// Where receipts are read and how many bytes they let run ahead, when writes without
    /// response are write commands on one ATT bearer and the device has a Client Characteristic
    /// Configuration descriptor (preferably in the service written to); otherwise why not, for
    /// the link summary. Both `nil` when no write command is sent at all (write requests are
    /// confirmed anyway).
    func deliveryReceipts(
        for writes: BlueZTransport.Writes,
        descriptors: [(characteristic: CharacteristicID, descriptor: BlueZObjectTree.Descriptor)],
        bearers: BlueZBearerAssessment
    ) -> (plan: BlueZTransport.ReceiptPlan?, offBecause: String?) {
        let commandPaths = writes.paths.filter { if case .writeRequest = $0.value { false } else { true } }
        guard !commandPaths.isEmpty else { return (nil, nil) }
        guard let window = configuration.deliveryWindow else { return (nil, "turned off") }
        guard !bearers.mayReorder else { return (nil, "several ATT bearers may carry the writes") }
        let services = Set(commandPaths.keys.map(\.service))
        guard
            let chosen = descriptors.first(where: { services.contains($0.characteristic.service) })
                ?? descriptors.first
        else { return (nil, "the device has no Client Characteristic Configuration descriptor") }
        let largest = writes.link.maximumWriteLength(for: .withoutResponse)
        let plan = BlueZTransport.ReceiptPlan(
            descriptorPath: chosen.descriptor.path, characteristic: chosen.characteristic,
            limit: DeliveryReceipts(limit: window, largestWrite: largest).limit)
        return (plan, nil)
    }

    /// bluetoothd's version, found once per process (it takes running `bluetoothd --version`);
    /// its command line and configuration file are read on every connect, so a bluetoothd
    /// restarted with other settings is seen.
    private static let versionCache = Mutex<String??>(nil)

    /// Whether writes without response may be reordered on this link: bluetoothd's `[GATT]
    /// Channels` and the device's Server Supported Features (``BlueZBearerAssessment``).
    private func assessBearers(
        _ gatt: [CharacteristicID: BlueZObjectTree.Characteristic], over session: BlueZSession
    ) async -> BlueZBearerAssessment {
        let settings: BluetoothdGATTSettings
        if let known = configuration.bluetoothdSettings {
            settings = known
        } else {
            var version = Self.versionCache.withLock { $0 }
            if version == nil {
                let found = await BlueZDoctor.bluetoothdVersion()
                Self.versionCache.withLock { $0 = .some(found) }
                version = .some(found)
            }
            settings = await BluetoothdGATTSettings.current(version: version ?? nil)
        }
        // With one bearer configured the device's support does not matter.
        guard settings.isEATTEnabled else { return BlueZBearerAssessment(settings: settings, peer: .unknown("not read")) }
        return BlueZBearerAssessment(settings: settings, peer: await peerEATTSupport(gatt, over: session))
    }

    /// Reads the device's Server Supported Features (0x2B3A), which BlueZ exports with the
    /// Generic Attribute service.
    private func peerEATTSupport(
        _ gatt: [CharacteristicID: BlueZObjectTree.Characteristic], over session: BlueZSession
    ) async -> PeerEATTSupport {
        guard
            let characteristic = gatt.values.sorted(by: { $0.path < $1.path })
                .first(where: { $0.uuid == PeerEATTSupport.serverSupportedFeatures })
        else {
            return .notSupported("it has no Server Supported Features characteristic")
        }
        do {
            let reply = try await session.call(
                characteristic.path, BlueZ.Interface.gattCharacteristic, "ReadValue", [.variantDictionary([:])],
                timeout: configuration.callTimeout,
                session.context("reading the Server Supported Features of \(address)", address: address))
            guard let bytes = reply.arguments.first?.bytes else {
                return .unknown("its Server Supported Features read returned no bytes")
            }
            return PeerEATTSupport(serverSupportedFeatures: Data(bytes))
        } catch {
            return .unknown("reading its Server Supported Features failed: \(error.message)")
        }
    }

    /// Chooses how each characteristic that takes writes without response is written to (its
    /// socket, `WriteValue(command)`, or write requests to keep their order), and the link
    /// parameters that follow.
    private func settleWrites(
        of gatt: [CharacteristicID: BlueZObjectTree.Characteristic],
        adapter: BlueZAdapter,
        bearers: BlueZBearerAssessment,
        over session: BlueZSession
    ) async throws(TransportError) -> BlueZTransport.Writes {
        var sockets: [CharacteristicID: BlueZWriteSocket] = [:]
        var writePaths: [CharacteristicID: BlueZTransport.WritePath] = [:]
        var mtu = gatt.values.compactMap(\.mtu).max()
        let writable = gatt.filter { $0.value.properties.contains(.writeWithoutResponse) }
        let ordered: String? =
            switch configuration.writeOrdering {
            case .requests: "write requests were asked for"
            case .automatic: bearers.mayReorder ? bearers.reason : nil
            case .commands: nil
            }
        for (id, characteristic) in writable.sorted(by: { $0.value.path < $1.value.path }) {
            if let ordered {
                writePaths[id] = .writeRequest(reason: ordered)
                continue
            }
            let path = try await writePath(for: characteristic, id: id, over: session)
            writePaths[id] = path.0
            if let socket = path.1 {
                sockets[id] = socket
                mtu = max(mtu ?? 0, socket.mtu)
            }
        }
        var summary = ["BlueZ \(adapter.name)"]
        if mtu == nil { summary.append("ATT MTU not reported (BlueZ before 5.62), assuming 23") }
        if let ordered, !writePaths.isEmpty {
            summary.append(BlueZTransport.WritePath.orderedSummary(because: ordered))
        } else if !writePaths.isEmpty {
            let fallbacks = writePaths.filter { if case .writeValueCommand = $0.value { true } else { false } }
            if bearers.mayReorder {
                summary.append(
                    "write commands kept although they can arrive out of order (\(bearers.reason)); a protocol without offsets may fail its final check"
                )
            }
            if fallbacks.isEmpty {
                let limits = Set(sockets.values.compactMap(\.statistics.queueLimit))
                var path = "write without response via AcquireWrite"
                if limits.count == 1, let limit = limits.first { path += " (at most \(limit) bytes queued in the socket)" }
                summary.append(path)
            } else {
                for (id, path) in fallbacks.sorted(by: { $0.key.characteristic < $1.key.characteristic }) {
                    summary.append("write without response to \(id.characteristic) via \(path)")
                }
            }
        }
        let link = BlueZ.linkParameters(
            attMTU: mtu ?? 23, writeWithoutResponseCap: configuration.writeWithoutResponseCap,
            summary: summary.joined(separator: ", "))
        return BlueZTransport.Writes(sockets: sockets, paths: writePaths, link: link)
    }

    /// Acquires the characteristic's socket, or says why writes fall back to `WriteValue(command)`.
    private func writePath(
        for characteristic: BlueZObjectTree.Characteristic,
        id: CharacteristicID,
        over session: BlueZSession
    ) async throws(TransportError) -> (BlueZTransport.WritePath, BlueZWriteSocket?) {
        guard configuration.usesAcquireWrite else {
            return (.writeValueCommand(reason: "AcquireWrite is turned off in the configuration"), nil)
        }
        guard !characteristic.properties.contains(.write) else {
            return (
                .writeValueCommand(
                    reason: "it also takes writes with response, which BlueZ refuses while it is acquired"), nil
            )
        }
        guard characteristic.writeAcquired != nil else {
            return (.writeValueCommand(reason: "BlueZ offers no AcquireWrite for it (no WriteAcquired property)"), nil)
        }
        let context = session.context(
            "acquiring \(id.characteristic) for writes without response", address: address, connecting: true)
        guard
            let reply = try await session.call(
                characteristic.path, BlueZ.Interface.gattCharacteristic, "AcquireWrite", [.variantDictionary([:])],
                timeout: configuration.callTimeout,
                tolerating: ["org.bluez.Error.NotSupported", DBusError.Name.unknownMethod.rawValue], context)
        else {
            return (.writeValueCommand(reason: "AcquireWrite is not supported"), nil)
        }
        let descriptor: DBusFileDescriptor
        let mtu: UInt16
        do {
            (descriptor, mtu) = try reply.decode(DBusFileDescriptor.self, UInt16.self)
        } catch {
            throw TransportError(.connectionFailed, "\(context.operation): unexpected reply (\(error))")
        }
        let socket = try BlueZWriteSocket(
            taking: descriptor.take(), mtu: Int(mtu), label: id.characteristic.description,
            sendBuffer: configuration.acquiredSocketSendBuffer)
        return (.acquiredSocket(mtu: Int(mtu)), socket)
    }
}
#endif
