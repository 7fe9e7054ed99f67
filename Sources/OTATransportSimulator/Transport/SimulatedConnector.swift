import OTACore

/// Connects to a ``SimulatedDevice`` over its modelled link.
public struct SimulatedConnector: Connector {
    /// The device.
    public let device: SimulatedDevice
    /// The ATT MTU the central offers; the link uses min(this, the device's maximum).
    public var centralMTU: Int
    /// What the central's stack does with writes that ignore back-pressure.
    public var overflow: WriteQueueOverflow

    /// Creates a connector. The default MTU offer, 517, is what BlueZ and recent iPhones offer.
    public init(device: SimulatedDevice, centralMTU: Int = 517, overflow: WriteQueueOverflow = .dropSilently) {
        self.device = device
        self.centralMTU = centralMTU
        self.overflow = overflow
    }

    public var deviceDescription: String { device.address }

    public func connect() async throws(TransportError) -> any Transport {
        try await connectSimulated()
    }

    /// Connects and returns the concrete connection, for tests that inspect the link.
    public func connectSimulated() async throws(TransportError) -> SimulatedConnection {
        let simulation = device.simulation
        do {
            try await simulation.clock.sleep(for: device.profile.link.connectionSetupTime)
        } catch {
            throw TransportError(.other, "cancelled")
        }
        guard device.isReachable else {
            // A real central keeps trying until its own timeout; the engine's connect timeout ends it.
            do {
                try await simulation.clock.sleep(for: .seconds(3600))
            } catch {
                throw TransportError(.connectionFailed, "\(device.address) did not answer: out of range or switched off")
            }
            throw TransportError(.connectionFailed, "\(device.address) did not answer: out of range or switched off")
        }
        let connection = SimulatedConnection(device: device, simulation: simulation, centralMTU: centralMTU, overflow: overflow)
        guard device.attach(connection) else {
            throw TransportError(.connectionFailed, "\(device.address) is already connected to another central")
        }
        device.model.connected(connection)
        return connection
    }
}
