import Foundation
import OTACore

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
