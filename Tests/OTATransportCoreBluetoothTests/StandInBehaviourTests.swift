// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTATransportSimulator
import Synchronization
import Testing

/// A delegate that notes where and what it was called with.
private final class RecordingDelegate: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    // @unchecked: written on the manager's queue, read after the simulation ran.
    let key = DispatchSpecificKey<Int>()
    var calls: [String] = []
    var offQueue = 0

    private func note(_ call: String) {
        if DispatchQueue.getSpecific(key: key) != 7 { offQueue += 1 }
        calls.append(call)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) { note("state \(central.state.rawValue)") }
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) { note("connect") }
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        note("disconnect \((error as? CBError)?.code.rawValue ?? -1)")
    }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) { note("services") }
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) { note("ready") }
}

/// The stand-in behaves like iOS where the transport depends on it.
@Suite struct StandInBehaviourTests {
    @Test func callbacksComeOnTheManagersQueueAndStateStartsUnknown() async throws {
        let world = StandInWorld(seed: 2)
        let handle = world.addPeripheral(SimulatedDevice(profile: .nrf52840, model: SinkDeviceModel(), simulation: world.simulation))
        let delegate = RecordingDelegate()
        let queue = DispatchQueue(label: "app")
        queue.setSpecific(key: delegate.key, value: 7)
        let identifier = handle.identifier
        let observed = try await world.run { () async throws -> [String] in
            let manager = CBCentralManager(delegate: delegate, queue: queue, options: nil)
            var observed = ["initial \(queue.sync { manager.state.rawValue })"]
            try await world.clock.sleep(for: .milliseconds(10))
            let peripheral = try #require(queue.sync { manager.retrievePeripherals(withIdentifiers: [identifier]).first })
            observed.append("before connect \(queue.sync { peripheral.maximumWriteValueLength(for: .withoutResponse) })")
            queue.sync {
                peripheral.delegate = delegate
                manager.connect(peripheral, options: nil)
            }
            try await world.clock.sleep(for: .seconds(1))
            observed.append("can send before the first write: \(queue.sync { peripheral.canSendWriteWithoutResponse })")
            observed.append("with response: \(queue.sync { peripheral.maximumWriteValueLength(for: .withResponse) })")
            observed.append("services before discovery: \(queue.sync { peripheral.services == nil })")
            queue.sync { peripheral.discoverServices(nil) }
            try await world.clock.sleep(for: .milliseconds(100))
            handle.dropLink()
            try await world.clock.sleep(for: .milliseconds(100))
            observed.append("services after the drop: \(queue.sync { peripheral.services == nil })")
            world.powerOff()
            try await world.clock.sleep(for: .milliseconds(10))
            queue.sync { manager.scanForPeripherals(withServices: nil, options: nil) }
            observed.append("scanning while off: \(queue.sync { manager.isScanning })")
            return observed
        }
        #expect(
            observed == [
                "initial 0", "before connect 0", "can send before the first write: false", "with response: 512", "services before discovery: true",
                "services after the drop: true", "scanning while off: false",
            ])
        #expect(delegate.calls == ["state 5", "connect", "services", "disconnect 7", "state 4"])
        #expect(delegate.offQueue == 0)
        #expect(world.misuseLog.contains { $0.contains("API MISUSE: scanForPeripherals") })
    }

    @Test func bluetoothOffDropsLinksWithoutADisconnectCallback() async throws {
        let world = StandInWorld(seed: 2)
        let handle = world.addPeripheral(SimulatedDevice(profile: .nrf52840, model: SinkDeviceModel(), simulation: world.simulation))
        let delegate = RecordingDelegate()
        let queue = DispatchQueue(label: "app")
        queue.setSpecific(key: delegate.key, value: 7)
        let identifier = handle.identifier
        try await world.run {
            let manager = CBCentralManager(delegate: delegate, queue: queue, options: nil)
            try await world.clock.sleep(for: .milliseconds(10))
            let peripheral = try #require(queue.sync { manager.retrievePeripherals(withIdentifiers: [identifier]).first })
            queue.sync { manager.connect(peripheral, options: nil) }
            try await world.clock.sleep(for: .seconds(1))
            world.powerOff()
            try await world.clock.sleep(for: .milliseconds(100))
            #expect(queue.sync { peripheral.state } == .disconnected)
        }
        #expect(!handle.isConnected)
        #expect(delegate.calls == ["state 5", "connect", "state 4"])
    }
}
#endif
