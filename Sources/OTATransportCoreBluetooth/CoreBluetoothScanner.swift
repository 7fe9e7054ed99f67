import Foundation
import OTACore

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothStandIn
#endif

/// Finds peripherals through a ``CoreBluetoothCentral``: `scanForPeripherals(withServices:)`
/// behind ``DeviceScanner/discoveries()``. Addresses are `CBPeripheral.identifier`s.
///
/// When Bluetooth goes off the stream stays open and the scan starts again when it is back (iOS
/// does not resume a scan by itself); when Bluetooth is not allowed or not supported the stream
/// ends with an error that says what to do.
public struct CoreBluetoothScanner: DeviceScanner {
    /// The central it scans through.
    public let central: CoreBluetoothCentral
    /// The services a peripheral must advertise (any of them), or `nil` for all.
    public let services: [GATTUUID]?
    /// Whether every advertisement is reported, not only the first per peripheral.
    public let allowDuplicates: Bool
    /// Whether names come from the advertisement only (`CBAdvertisementDataLocalNameKey`), not
    /// from `CBPeripheral.name` when the advertisement has none.
    var advertisedNamesOnly = false

    init(central: CoreBluetoothCentral, services: [GATTUUID]?, allowDuplicates: Bool, advertisedNamesOnly: Bool = false) {
        self.central = central
        self.services = services
        self.allowDuplicates = allowDuplicates
        self.advertisedNamesOnly = advertisedNamesOnly
    }

    public var clock: any Clock<Duration> { central.clock }

    public func discoveries() async throws(OTAError) -> AsyncThrowingStream<DiscoveredDevice, any Error> {
        let bridge = central.bridge
        await bridge.waitForFirstState()
        let state = bridge.onQueue { bridge.manager.state }
        if CoreBluetoothFailure.isPermanent(state), let problem = CoreBluetoothFailure.stateProblem(state) {
            throw OTAError(.connectionFailed, "cannot scan: \(problem)")
        }
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveredDevice.self, throwing: (any Error).self)
        let (services, allowDuplicates, advertisedNamesOnly) = (services, allowDuplicates, advertisedNamesOnly)
        bridge.onQueue {
            let id = bridge.makeID()
            bridge.scans[id] = CentralBridge.Scan(
                services: services, allowDuplicates: allowDuplicates, advertisedNamesOnly: advertisedNamesOnly, continuation: continuation)
            continuation.onTermination = { _ in
                // Run by a cancelled consumer's cancellation handler: must not wait for the queue.
                bridge.afterCancellation {
                    guard bridge.scans.removeValue(forKey: id) != nil else { return }
                    bridge.startScanning(bridge.manager)
                }
            }
            bridge.startScanning(bridge.manager)
        }
        return stream
    }
}
