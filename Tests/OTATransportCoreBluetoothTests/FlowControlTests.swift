// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

/// A delegate for a deliberately naive app: it counts state updates and nothing else.
private final class NaiveDelegate: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    func centralManagerDidUpdateState(_ central: CBCentralManager) {}
}

/// The seed's bug, reproduced and avoided: iOS drops writes without response from a writer that
/// ignores `canSendWriteWithoutResponse`; the transport never does.
@Suite struct FlowControlTests {
    static func chunks(count: Int, size: Int) -> [Data] {
        (0..<count).map { index in Data((0..<size).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) }) }
    }

    @Test func aNaiveWriterLosesBytesInTheStandIn() async throws {
        let world = StandInWorld(seed: 3)
        let model = SinkDeviceModel()
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: model, simulation: world.simulation)
        let handle = world.addPeripheral(device)
        let chunks = Self.chunks(count: 400, size: 244)
        let identifier = handle.identifier
        try await world.run {
            let queue = DispatchQueue(label: "naive")
            let delegate = NaiveDelegate()
            let manager = CBCentralManager(delegate: delegate, queue: queue, options: nil)
            try await world.clock.sleep(for: .milliseconds(10))
            let peripheral = try #require(queue.sync { manager.retrievePeripherals(withIdentifiers: [identifier]).first })
            queue.sync {
                peripheral.delegate = delegate
                manager.connect(peripheral, options: nil)
            }
            try await world.clock.sleep(for: .seconds(1))
            queue.sync { peripheral.discoverServices(nil) }
            try await world.clock.sleep(for: .milliseconds(200))
            queue.sync { for service in peripheral.services ?? [] { peripheral.discoverCharacteristics(nil, for: service) } }
            try await world.clock.sleep(for: .milliseconds(200))
            let characteristic = try #require(
                queue.sync {
                    peripheral.services?.flatMap { $0.characteristics ?? [] }.first { $0.uuid == CBUUID(string: "5A1E0002-0000-1000-8000-00805F9B34FB") }
                })
            #expect(queue.sync { peripheral.maximumWriteValueLength(for: .withoutResponse) } == 244)
            // The naive loop: every chunk at once, never looking at canSendWriteWithoutResponse.
            queue.sync { for chunk in chunks { peripheral.writeValue(chunk, for: characteristic, type: .withoutResponse) } }
            try await world.clock.sleep(for: .seconds(5))
        }
        let sent = chunks.reduce(Data(), +)
        #expect(handle.writesDropped > 0)
        #expect(model.bytes.count == sent.count - handle.writesDropped * 244)
        #expect(model.bytes.count < sent.count)
    }

    static let quirks: [(String, StandInWorld.Configuration)] = {
        var plain = StandInWorld.Configuration()
        plain.canSendIsFalseBeforeFirstWrite = false
        var noReady = StandInWorld.Configuration()
        noReady.deliversReadyCallback = false
        var spurious = StandInWorld.Configuration()
        spurious.spuriousReadyCallbacks = true
        var shallow = StandInWorld.Configuration()
        shallow.writeQueueDepth = 2
        return [
            ("default", StandInWorld.Configuration()), ("flag true at first", plain), ("no ready callback", noReady), ("spurious ready callbacks", spurious),
            ("queue of 2", shallow),
        ]
    }()

    /// The transport's writes, through `write` alone or, as the engine sends data, offered at
    /// once first (``ImmediateWriting``) and written with `write` (which waits for the ready
    /// signal) only when refused: nothing lost or doubled under any quirk, and back-pressure at
    /// work (the writer waited, or writes were refused and not sent).
    @Test(arguments: quirks, [false, true])
    func theTransportLosesNothing(quirk: (name: String, configuration: StandInWorld.Configuration), immediate: Bool) async throws {
        let world = StandInWorld(seed: 3)
        world.configuration = quirk.configuration
        let model = SinkDeviceModel()
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: model, simulation: world.simulation)
        let handle = world.addPeripheral(device)
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let chunks = Self.chunks(count: 400, size: 244)
        let (pauses, taken, refused) = try await world.run {
            let transport = try await central.connector(for: handle.identifier).connectCoreBluetooth()
            #expect(transport.link.maximumWriteWithoutResponse == 244)
            var taken = 0
            var refused = 0
            for chunk in chunks {
                if immediate, try transport.writeWithoutResponseIfReady(chunk, to: SinkDeviceModel.data) {
                    taken += 1
                    continue
                }
                if immediate { refused += 1 }
                try await transport.write(chunk, to: SinkDeviceModel.data, kind: .withoutResponse)
            }
            try await world.clock.sleep(for: .seconds(1))
            let pauses = transport.writerPauses
            await transport.disconnect()
            return (pauses, taken, refused)
        }
        let name = "\(quirk.name)\(immediate ? ", immediate" : "")"
        #expect(handle.writesDropped == 0, "\(name)")
        #expect(model.bytes == chunks.reduce(Data(), +), "\(name)")
        if immediate {
            #expect(taken > 0 && refused > 0, "\(name): \(taken) taken at once, \(refused) refused")
        } else {
            #expect(pauses > 0, "\(name)")
        }
    }
}
#endif
