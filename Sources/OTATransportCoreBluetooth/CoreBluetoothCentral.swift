import Foundation
import OTACore

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothStandIn
#endif

/// The transport's own Bluetooth central: one `CBCentralManager` the transport creates and owns
/// (never the app's), whose delegate callbacks arrive on a serial queue of its own.
///
/// Make one per app (keep it for the app's life) and ask it for connectors and scanners:
///
/// ```swift
/// let central = CoreBluetoothCentral(restoreIdentifier: "com.example.updater")
/// let connector = central.connector(for: peripheralID)
/// let report = try await UpdateEngine(clock: central.clock).update(image, using: client, connector: connector)
/// ```
///
/// - Important: Every CoreBluetooth object stays on the central's queue. Async callers reach it
///   with a short synchronous hop (`DispatchQueue.sync`, as with a lock) to issue a call or file
///   a continuation, never to wait for the radio: answers resume continuations from the
///   delegate callbacks (docs/decisions/0018-corebluetooth-transport.md).
public final class CoreBluetoothCentral: Sendable {
    /// The clock every wait of the transport runs on.
    public let clock: any Clock<Duration>
    /// The restore identifier the manager was created with, if any.
    public let restoreIdentifier: String?
    let bridge: CentralBridge

    /// Creates the central and its manager.
    ///
    /// - Parameters:
    ///   - clock: the clock of every time limit (a test's virtual clock; ``RealTimeClock`` in an app).
    ///   - restoreIdentifier: for state preservation and restoration: keep it the same on every
    ///     launch, and call ``restoredPeripherals()`` at launch to resume an update the system
    ///     relaunched the app for. Needs the `bluetooth-central` background mode.
    ///   - showPowerAlert: whether iOS warns the user when Bluetooth is off at creation.
    public init(clock: any Clock<Duration> = RealTimeClock(), restoreIdentifier: String? = nil, showPowerAlert: Bool = true) {
        self.clock = clock
        self.restoreIdentifier = restoreIdentifier
        bridge = CentralBridge(clock: clock, restoreIdentifier: restoreIdentifier, showPowerAlert: showPowerAlert)
    }

    /// A connector to the peripheral with `identifier` (`CBPeripheral.identifier`, as a scan
    /// reports it in ``DiscoveredDevice/address``).
    public func connector(for identifier: UUID, timeouts: CoreBluetoothTimeouts = CoreBluetoothTimeouts()) -> CoreBluetoothConnector {
        CoreBluetoothConnector(central: self, identifier: identifier, timeouts: timeouts)
    }

    /// A scanner for peripherals advertising any of `services` (`nil`: every peripheral; iOS in
    /// the background needs at least one service).
    public func scanner(services: [GATTUUID]?, allowDuplicates: Bool = false) -> CoreBluetoothScanner {
        CoreBluetoothScanner(central: self, services: services, allowDuplicates: allowDuplicates)
    }

    /// The peripherals the system handed back at launch (state restoration), as identifiers for
    /// ``connector(for:timeouts:)``: the links are still up, and connecting picks them up without
    /// a new connection, so the engine resumes from what the device holds.
    ///
    /// Waits for the manager's first state update (restoration always comes before it); empty
    /// without a restore identifier.
    public func restoredPeripherals() async -> [UUID] {
        await bridge.waitForFirstState()
        return bridge.onQueue { bridge.restored }
    }

    /// Whether Bluetooth is on and allowed, after the first state update (nil before).
    public var isPoweredOn: Bool? {
        bridge.onQueue { bridge.stateKnown ? bridge.manager.state == .poweredOn : nil }
    }
}

/// The time limits of the CoreBluetooth transport, all on the central's clock. (CoreBluetooth's
/// own connection attempts never time out.)
public struct CoreBluetoothTimeouts: Sendable, Hashable {
    /// How long a connection attempt may take before it is cancelled.
    public var connect: Duration = .seconds(10)
    /// How long service and characteristic discovery may take.
    public var discovery: Duration = .seconds(10)
    /// How long to wait for Bluetooth to be on before a connection fails.
    public var poweredOn: Duration = .seconds(10)
    /// How long a paused write without response waits for `peripheralIsReady` before it
    /// checks `canSendWriteWithoutResponse` again (the callback sometimes never comes).
    public var readyFallback: Duration = .milliseconds(15)
    /// How long ``Transport/disconnect()`` waits for CoreBluetooth to confirm.
    public var disconnect: Duration = .seconds(2)
    /// After a jump, how long the scan goes on once one peripheral advertises the name looked
    /// for, to hear a second that would make the choice ambiguous
    /// (``CoreBluetoothConnector/reappeared(matching:within:)``): several advertising intervals
    /// of a bootloader.
    public var reappearanceSettle: Duration = .milliseconds(500)

    /// The defaults.
    public init() {}
}
