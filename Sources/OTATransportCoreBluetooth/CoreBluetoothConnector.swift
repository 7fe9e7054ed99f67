import Foundation
import OTACore
import Synchronization

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothStandIn
#endif

/// Connects to one peripheral through a ``CoreBluetoothCentral``: waits for Bluetooth, connects
/// with a time limit on the central's clock (CoreBluetooth's attempts never end by themselves),
/// discovers every service and characteristic, and reads the write lengths iOS negotiated.
///
/// A peripheral the system restored (``CoreBluetoothCentral/restoredPeripherals()``) is still
/// connected: connecting picks up its link and only discovers again.
public struct CoreBluetoothConnector: Connector {
    /// The central it connects through.
    public let central: CoreBluetoothCentral
    /// The peripheral's identifier (`CBPeripheral.identifier`).
    public let identifier: UUID
    /// The time limits.
    public var timeouts: CoreBluetoothTimeouts

    /// Creates a connector; ``CoreBluetoothCentral/connector(for:timeouts:)`` is the usual way.
    public init(central: CoreBluetoothCentral, identifier: UUID, timeouts: CoreBluetoothTimeouts = CoreBluetoothTimeouts()) {
        self.central = central
        self.identifier = identifier
        self.timeouts = timeouts
    }

    public var deviceDescription: String { identifier.uuidString }

    // MARK: - After a jump

    /// How often the scan for a device that came back is looked at.
    static let reappearancePoll: Duration = .milliseconds(50)

    /// The peripheral advertising the rule's name, after the device restarted into another
    /// role: iOS shows no addresses, and a device back at another address is another peripheral
    /// with a new identifier, so the name is all there is to find it by.
    ///
    /// Scans every peripheral (duplicates reported, so that a peripheral that changed its
    /// advertisement counts as it is now) and takes names from the advertisement alone
    /// (`CBAdvertisementDataLocalNameKey`): iOS's `CBPeripheral.name` is the GAP name it cached
    /// for an identifier, which after a jump at the same address is the application's. Once one
    /// peripheral matches, it listens on for ``CoreBluetoothTimeouts/reappearanceSettle`` (within
    /// `window`) for a second; two are refused, never guessed between. Every wait is on the
    /// central's clock.
    ///
    /// - Throws: ``OTAError/Code/connectionFailed``: at once for a rule without a name (addresses
    ///   alone cannot be checked here); naming the rule and every peripheral heard when none or
    ///   several match within `window` (``ReappearanceRule/failure(heard:after:)``).
    public func reappeared(matching rule: ReappearanceRule, within window: Duration) async throws(OTAError) -> any Connector {
        guard let name = rule.name else {
            throw OTAError(
                .connectionFailed,
                "cannot find \(deviceDescription) again: it comes back \(rule.description) under no name set for this update, and CoreBluetooth shows no addresses; start its bootloader by hand (a button held at reset) and update the peripheral it then advertises, with no other like it in range"
            )
        }
        let byName = ReappearanceRule(addresses: [], name: name)
        let (clock, settle, poll) = (central.clock, timeouts.reappearanceSettle, Self.reappearancePoll)
        // The window counts from here, waiting for Bluetooth included.
        let stopwatch = Stopwatch(clock: clock)
        let scanner = CoreBluetoothScanner(central: central, services: nil, allowDuplicates: true, advertisedNamesOnly: true)
        let discoveries = try await scanner.discoveries()
        let heard = Heard()
        let outcome: Result<UUID, OTAError> = await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await device in discoveries { heard.devices.withLock { $0.append(device) } }
                } catch {
                    heard.failure.withLock { $0 = OTAError.wrapping(error, context: "looking for the device \(byName.description)") }
                }
            }
            defer { group.cancelAll() }
            var matchedSince: Duration?
            while true {
                let elapsed = stopwatch.elapsed
                // The latest report of each peripheral: one that advertised the name and then stopped
                // (or took another) is no longer a candidate.
                let candidates = DiscoveredDevice.latestPerAddress(heard.devices.withLock { $0 })
                switch byName.select(from: candidates) {
                case .ambiguous:
                    return .failure(byName.failure(heard: candidates, after: window))
                case .found(let device):
                    if let since = matchedSince, elapsed - since >= settle || elapsed >= window, let identifier = UUID(uuidString: device.address) {
                        return .success(identifier)
                    }
                    matchedSince = matchedSince ?? elapsed
                case .none:
                    matchedSince = nil
                }
                if let failure = heard.failure.withLock({ $0 }) { return .failure(failure) }
                if matchedSince == nil, elapsed >= window { return .failure(byName.failure(heard: candidates, after: window)) }
                do {
                    try await clock.sleep(for: min(poll, max(.zero, window - elapsed)))
                } catch {
                    return .failure(OTAError(.cancelled, "cancelled while looking for the device \(byName.description)"))
                }
            }
        }
        return CoreBluetoothConnector(central: central, identifier: try outcome.get(), timeouts: timeouts)
    }

    /// What a scan after a jump heard, shared by the task that listens and the one that decides.
    private final class Heard: Sendable {
        let devices = Mutex<[DiscoveredDevice]>([])
        let failure = Mutex<OTAError?>(nil)
    }

    public func connect() async throws(TransportError) -> any Transport {
        try await connectCoreBluetooth()
    }

    /// Connects and returns the concrete transport.
    public func connectCoreBluetooth() async throws(TransportError) -> CoreBluetoothTransport {
        let bridge = central.bridge
        let (identifier, timeouts, name) = (identifier, timeouts, deviceDescription)
        try await bridge.waitForPoweredOn(within: timeouts.poweredOn)

        let transport: CoreBluetoothTransport = try bridge.onQueue { () throws(TransportError) in
            guard let peripheral = bridge.peripherals[identifier] ?? bridge.manager.retrievePeripherals(withIdentifiers: [identifier]).first
            else {
                throw TransportError(.connectionFailed, "\(name) is unknown to this phone: scan for it first")
            }
            bridge.peripherals[identifier] = peripheral
            peripheral.delegate = bridge
            if let previous = bridge.sessions[identifier] { previous.fail(.closedByApp) }
            let transport = CoreBluetoothTransport(bridge: bridge, peripheral: peripheral, timeouts: timeouts)
            bridge.sessions[identifier] = transport
            return transport
        }

        let alreadyConnected = bridge.onQueue { transport.peripheral.state == .connected }
        if !alreadyConnected {
            try await attempt(transport, bridge: bridge)
        }
        do throws(TransportError) {
            try await transport.discover()
        } catch {
            await transport.disconnect()
            if case .disconnected(let reason) = error.kind {
                throw TransportError(.connectionFailed, "\(name) dropped the link while its services were discovered (\(reason))")
            }
            throw error
        }
        return transport
    }

    /// One connection attempt, bounded by ``CoreBluetoothTimeouts/connect``.
    private func attempt(_ transport: CoreBluetoothTransport, bridge: CentralBridge) async throws(TransportError) {
        let (identifier, limit, name) = (identifier, timeouts.connect, deviceDescription)
        let peripheral = Unchecked(transport.peripheral)
        let outcome: Result<Void, TransportError>
        do {
            outcome = try await withTimeout(limit, clock: bridge.clock, timeoutError: OTAError(.timeout, "")) {
                await bridge.suspend { id, continuation in
                    bridge.attempts[identifier]?.continuation.resume(returning: .failure(TransportError(.connectionFailed, "superseded")))
                    bridge.attempts[identifier] = CentralBridge.Attempt(id: id, continuation: continuation)
                    bridge.manager.connect(peripheral.value, options: nil)
                    return nil
                } withdraw: { id in
                    guard let attempt = bridge.attempts[identifier], attempt.id == id else { return nil }
                    bridge.attempts[identifier] = nil
                    return attempt.continuation
                }
            }
        } catch {
            // Timed out or cancelled: CoreBluetooth would keep trying forever.
            bridge.onQueue {
                bridge.sessions[identifier] = nil
                bridge.manager.cancelPeripheralConnection(peripheral.value)
            }
            if Task.isCancelled { throw CoreBluetoothFailure.cancelled }
            throw TransportError(
                .connectionFailed,
                "\(name) did not answer within \(limit.humanReadable): out of range, switched off, or connected to another phone")
        }
        if case .failure(let error) = outcome {
            bridge.onQueue { if bridge.sessions[identifier] === transport { bridge.sessions[identifier] = nil } }
            throw error
        }
    }
}

/// Carries a CoreBluetooth object, confined to the central's queue, across a `@Sendable` boundary.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
