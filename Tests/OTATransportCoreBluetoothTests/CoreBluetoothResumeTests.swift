// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolFramed
import OTAProtocolGeneric
import OTAProtocolNordicDFU
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

/// Updates that lose the link, Bluetooth, the app's process or the device's GATT table on the
/// way, through the CoreBluetooth transport.
@Suite struct CoreBluetoothResumeTests {
    @Test func aForcedDisconnectResumesWhereTheDeviceStands() async throws {
        let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: FramedDeviceModel())
        var faults = LinkFaults()
        faults.disconnectAtBytes = [60_000, 140_000]
        harness.device.faults = faults
        let image = try CoreBluetoothHarness.image(size: 200_000)
        let outcome = try await harness.update(image, using: FramedClient())
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == (try image.allBytes()))
        #expect(report.resumes == 2)
        #expect(report.bytesSent - image.count <= 2 * 3 * 16 * 236)
        #expect(outcome.states.filter { $0 == .paused }.count == 2)
        #expect(outcome.notes.contains { $0.hasPrefix("resuming: device holds") })
        #expect(harness.peripheral.linksOpened == 3)
    }

    @Test func aGenericUpdateStartsOverAfterADrop() async throws {
        let model = GenericDeviceModel()
        let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: model)
        var faults = LinkFaults()
        faults.disconnectAtBytes = [50_000]
        harness.device.faults = faults
        let image = try CoreBluetoothHarness.image(size: 100_000)
        let report = try await harness.update(image, using: GenericClient()).result.get()
        #expect(harness.flashContents(image.count) == (try image.allBytes()))
        #expect(model.installedImage?.crc32 == image.crc32)
        #expect(report.restarts == 1)
        #expect(report.resumes == 0)
        #expect(report.bytesSent >= 50_000 + image.count)
    }

    @Test func bluetoothOffMidUpdatePausesAndResumesWhenItIsBack() async throws {
        let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: FramedDeviceModel())
        let image = try CoreBluetoothHarness.image(size: 200_000)
        let outcome = try await harness.update(image, using: FramedClient()) { world in
            try? await world.clock.sleep(for: .milliseconds(1500))
            world.powerOff()
            try? await world.clock.sleep(for: .seconds(4))
            world.powerOn()
        }
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == (try image.allBytes()))
        #expect(report.resumes >= 1)
        #expect(outcome.states.contains(.paused))
        #expect(outcome.notes.contains { $0.hasPrefix("resuming: device holds") })
        // Nothing was sent while Bluetooth was off, and the update ended after it came back.
        #expect(outcome.virtualTime > .milliseconds(5500))
        #expect(harness.world.misuseLog.isEmpty, "\(harness.world.misuseLog)")
    }

    @Test func serviceChangedMidUpdateIsRediscoveredNotUsedStale() async throws {
        let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: FramedDeviceModel())
        let image = try CoreBluetoothHarness.image(size: 200_000)
        let recorder = TransportRecorder(central: harness.makeCentral(), identifier: harness.peripheral.identifier)
        let outcome = try await harness.update(image, using: FramedClient(), connector: recorder) { world in
            try? await world.clock.sleep(for: .milliseconds(1500))
            harness.peripheral.changeServices()
        }
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == (try image.allBytes()))
        #expect(report.resumes == 0)
        #expect(recorder.transports.map(\.rediscoveryCount) == [1])
    }

    @Test func restorationResumesAnUpdateWithoutHostState() async throws {
        let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: FramedDeviceModel())
        let image = try CoreBluetoothHarness.image(size: 200_000)
        let world = harness.world
        // First launch: the system terminates the app in the middle of the update.
        let first = harness.makeCentral(restoreIdentifier: "com.example.updater")
        let firstConnector = first.connector(for: harness.peripheral.identifier)
        try await world.run {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    _ = try? await UpdateEngine(clock: world.clock).update(image, using: FramedClient(), connector: firstConnector)
                }
                group.addTask {
                    try? await world.clock.sleep(for: .milliseconds(1500))
                    world.terminateApp()
                }
                await group.next()
                group.cancelAll()
            }
        }
        let heldAfterTermination = harness.device.flash.read(0..<image.count) != (try image.allBytes())
        #expect(heldAfterTermination)
        #expect(harness.peripheral.isConnected, "the system keeps the link of a restorable manager")
        // Relaunch: a new central with the same identifier gets the peripheral back.
        let second = harness.makeCentral(restoreIdentifier: "com.example.updater")
        let restored = try await world.run { await second.restoredPeripherals() }
        #expect(restored == [harness.peripheral.identifier])
        let outcome = try await harness.update(image, using: FramedClient(), central: second)
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == (try image.allBytes()))
        #expect(report.bytesSent < image.count - 50_000)
        #expect(outcome.notes.contains { $0.hasPrefix("continuing at byte") })
        // The restored link was used: no new connection.
        #expect(harness.peripheral.linksOpened == 1)
    }

    @Test func withoutARestoreIdentifierTerminationClosesTheLink() async throws {
        let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: FramedDeviceModel())
        let world = harness.world
        let central = harness.makeCentral()
        let connector = central.connector(for: harness.peripheral.identifier)
        try await world.run {
            _ = try await connector.connect()
            world.terminateApp()
            try await world.clock.sleep(for: .milliseconds(100))
        }
        #expect(!harness.peripheral.isConnected)
        let relaunched = harness.makeCentral(restoreIdentifier: "com.example.updater")
        #expect(try await world.run { await relaunched.restoredPeripherals() }.isEmpty)
    }
}

/// A connector that keeps the transports it opened, for inspection.
final class TransportRecorder: Connector, @unchecked Sendable {
    // @unchecked: `opened` is only touched on the simulation's thread.
    private let connector: CoreBluetoothConnector
    private var opened: [CoreBluetoothTransport] = []

    init(central: CoreBluetoothCentral, identifier: UUID) {
        connector = central.connector(for: identifier)
    }

    var transports: [CoreBluetoothTransport] { opened }
    var deviceDescription: String { connector.deviceDescription }

    func connect() async throws(TransportError) -> any Transport {
        let transport = try await connector.connectCoreBluetooth()
        opened.append(transport)
        return transport
    }
}
#endif
