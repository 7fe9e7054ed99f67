import OTACore

/// Connects to a ``SimulatedDevice`` over its modelled link.
public struct SimulatedConnector: Connector {
    /// The device.
    public let device: SimulatedDevice
    /// The ATT MTU the central offers; the link uses min(this, the device's maximum).
    public var centralMTU: Int
    /// What the central's stack does with writes that ignore back-pressure.
    public var overflow: WriteQueueOverflow
    /// The adapter the connection goes through, or `nil` for a central with unlimited
    /// connections and a radio per link (every test before adapters existed).
    public var adapter: SimulatedAdapter?
    /// The address it connects to, as a radio does: the device is reached only while it
    /// advertises there (``SimulatedDevice/advertisedAddress``). `nil`: wherever it advertises.
    public let address: String?
    /// The address the device was found at after it restarted elsewhere, for messages.
    var reachedAs: String?

    /// Creates a connector. The default MTU offer, 517, is what BlueZ and recent iPhones offer.
    ///
    /// - Parameter address: the address to connect to, as on a radio (a device advertising at
    ///   another address is not there); `nil` reaches `device` wherever it advertises.
    public init(
        device: SimulatedDevice, centralMTU: Int = 517, overflow: WriteQueueOverflow = .dropSilently, adapter: SimulatedAdapter? = nil,
        address: String? = nil
    ) {
        self.device = device
        self.adapter = adapter
        self.centralMTU = centralMTU
        self.overflow = overflow
        self.address = address?.uppercased()
    }

    public var deviceDescription: String { reachedAs.map { "\($0) (\(device.address) restarted)" } ?? address ?? device.address }

    /// The address it connects to; without one, where the device advertises now
    /// (``SimulatedDevice/advertisedAddress``).
    public var airAddress: String? { address ?? device.advertisedAddress }

    /// Whether the device can be reached through this connector now: reachable, and at the
    /// address it connects to.
    private var deviceIsHere: Bool {
        guard device.isReachable else { return false }
        guard let address else { return true }
        return device.advertisedAddress.uppercased() == address
    }

    /// How often a scan for a device that came back elsewhere looks at what is advertising.
    static let scanInterval: Duration = .milliseconds(100)

    /// Listens to every device in range of the simulation's central (its
    /// ``Simulation/devicesInRange`` that advertise) until exactly one satisfies `rule`, and
    /// connects to that one: its own device after a jump, never a neighbour.
    ///
    /// - Throws: ``OTAError/Code/connectionFailed`` from ``ReappearanceRule/failure(heard:after:)``
    ///   when none matches within `window`, or several do.
    public func reappeared(matching rule: ReappearanceRule, within window: Duration) async throws(OTAError) -> any Connector {
        let simulation = device.simulation
        let deadline = simulation.now + window
        var heard: [DiscoveredDevice] = []
        while true {
            var inRange: [(DiscoveredDevice, SimulatedDevice)] = []
            for candidate in simulation.devicesInRange {
                guard let discovery = candidate.discovery else { continue }
                inRange.append((discovery, candidate))
                heard.append(discovery)
            }
            switch rule.select(from: inRange.map(\.0)) {
            case .found(let match):
                guard let found = inRange.first(where: { $0.0 == match })?.1 else { break }
                var connector = SimulatedConnector(
                    device: found, centralMTU: centralMTU, overflow: overflow, adapter: adapter, address: address == nil ? nil : match.address)
                connector.reachedAs = match.address
                return connector
            case .ambiguous:
                throw rule.failure(heard: inRange.map(\.0), after: window)
            case .none:
                break
            }
            guard simulation.now + Self.scanInterval <= deadline else { throw rule.failure(heard: heard, after: window) }
            do {
                try await simulation.clock.sleep(for: Self.scanInterval)
            } catch {
                throw OTAError(.cancelled, "cancelled while looking for the device \(rule.description)")
            }
        }
    }

    public func connect() async throws(TransportError) -> any Transport {
        try await connectSimulated()
    }

    /// Connects and returns the concrete connection, for tests that inspect the link.
    public func connectSimulated() async throws(TransportError) -> SimulatedConnection {
        let simulation = device.simulation
        let slot = try adapter?.reserve(for: device.address)
        var connected = false
        defer { if !connected, let slot { adapter?.release(slot) } }
        do {
            try await simulation.clock.sleep(for: device.profile.link.connectionSetupTime)
        } catch {
            throw TransportError(.other, "cancelled")
        }
        guard deviceIsHere else {
            // A real central keeps trying until its own timeout; the engine's connect timeout ends it.
            let target = address ?? device.address
            do {
                try await simulation.clock.sleep(for: .seconds(3600))
            } catch {
                throw TransportError(.connectionFailed, "\(target) did not answer: out of range or switched off")
            }
            throw TransportError(.connectionFailed, "\(target) did not answer: out of range or switched off")
        }
        let connection = SimulatedConnection(
            device: device, simulation: simulation, centralMTU: centralMTU, overflow: overflow, adapter: slot.map { (adapter!, $0) }
        )
        guard device.attach(connection) else {
            throw TransportError(.connectionFailed, "\(device.address) is already connected to another central")
        }
        connected = true
        device.model.connected(connection)
        return connection
    }
}
