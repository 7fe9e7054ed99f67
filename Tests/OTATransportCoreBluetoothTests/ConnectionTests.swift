// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolFramed
import OTAProtocolGeneric
import OTATransportCoreBluetooth
import OTATransportSimulator
import Synchronization
import Testing

/// Connecting, failing to connect and losing the link, as CoreBluetooth reports them.
@Suite struct ConnectionTests {
    private func sinkWorld(
        _ profile: DeviceProfile = .esp32S3MTU244TwoM, configure: (inout StandInWorld.Configuration) -> Void = { _ in }
    )
        -> (StandInWorld, StandInPeripheral, SinkDeviceModel)
    {
        let world = StandInWorld(seed: 5)
        configure(&world.configuration)
        let model = SinkDeviceModel()
        let device = SimulatedDevice(profile: profile, model: model, simulation: world.simulation)
        return (world, world.addPeripheral(device), model)
    }

    @Test(arguments: [StandInWorld.ConnectFault.failToConnectThenDisconnect, .failToConnect, .disconnectWithoutConnect])
    func oneFailedAttemptIsOneFailure(fault: StandInWorld.ConnectFault) async throws {
        let (world, handle, model) = sinkWorld()
        handle.failNextConnection(fault)
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let connector = central.connector(for: handle.identifier)
        let (failures, messages) = try await world.run {
            var failures = 0
            var messages: [String] = []
            do throws(TransportError) {
                _ = try await connector.connect()
            } catch {
                failures += 1
                messages.append(error.message)
                #expect(error.kind == .connectionFailed)
            }
            // The late didDisconnectPeripheral of the failed attempt must not end the next one.
            let transport = try await connector.connect()
            try await transport.write(Data([1, 2, 3]), to: SinkDeviceModel.data, kind: .withResponse)
            await transport.disconnect()
            return (failures, messages)
        }
        #expect(failures == 1)
        #expect(messages.count == 1)
        #expect(model.bytes == Data([1, 2, 3]))
    }

    @Test func aConnectionThatNeverCompletesTimesOutOnTheInjectedClock() async throws {
        let (world, handle, _) = sinkWorld()
        handle.device.isReachable = false
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        var timeouts = CoreBluetoothTimeouts()
        timeouts.connect = .seconds(4)
        let connector = central.connector(for: handle.identifier, timeouts: timeouts)
        let (error, elapsed) = try await world.run { () async -> (TransportError?, Duration) in
            let start = world.clock.now
            do throws(TransportError) {
                _ = try await connector.connect()
                return (nil, start.duration(to: world.clock.now))
            } catch {
                return (error, start.duration(to: world.clock.now))
            }
        }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.message.contains("did not answer within 4") == true)
        #expect(elapsed >= .seconds(4) && elapsed < .seconds(5))
        #expect(!handle.isConnected)
    }

    @Test(arguments: [(185, 247, 182), (517, 247, 244), (517, 517, 514), (185, 23, 20)])
    func writeLengthsComeFromTheNegotiatedMTU(central centralMTU: Int, device deviceMTU: Int, expected: Int) async throws {
        var profile = DeviceProfile.esp32S3MTU244TwoM
        profile.link.deviceMaximumMTU = deviceMTU
        let (world, handle, _) = sinkWorld(profile) { $0.centralMTU = centralMTU }
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let link = try await world.run {
            let transport = try await central.connector(for: handle.identifier).connectCoreBluetooth()
            let link = transport.link
            await transport.disconnect()
            return link
        }
        #expect(link.maximumWriteWithoutResponse == expected)
        #expect(link.attMTU == expected + 3)
        // iOS reports 512 for writes with response (it splits them); the transport keeps one ATT PDU.
        #expect(link.maximumWriteWithResponse == min(expected, 512))
    }

    @Test func aValueLongerThanTheLinkIsRefusedBeforeCoreBluetoothSeesIt() async throws {
        let (world, handle, model) = sinkWorld()
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let error = try await world.run { () async throws -> TransportError? in
            let transport = try await central.connector(for: handle.identifier).connectCoreBluetooth()
            do throws(TransportError) {
                try await transport.write(Data(count: 245), to: SinkDeviceModel.data, kind: .withoutResponse)
                return nil
            } catch {
                await transport.disconnect()
                return error
            }
        }
        #expect(error?.kind == .valueTooLong(length: 245, maximum: 244))
        #expect(model.bytes.isEmpty)
    }

    /// A connect started while Bluetooth is off waits for the state to change, and goes on as
    /// soon as it is on, not when its limit for Bluetooth coming on runs out.
    @Test func aConnectWhileBluetoothIsOffGoesOnWhenItComesOn() async throws {
        let (world, handle, _) = sinkWorld()
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        var timeouts = CoreBluetoothTimeouts()
        timeouts.poweredOn = .seconds(60)
        let connector = central.connector(for: handle.identifier, timeouts: timeouts)
        let connectedAt = try await world.run {
            world.powerOff()
            // The manager hears of it first: the connect starts with Bluetooth off.
            try await world.clock.sleep(for: .milliseconds(100))
            async let connected: Duration = {
                let transport = try await connector.connectCoreBluetooth()
                let at = world.simulation.now
                await transport.disconnect()
                return at
            }()
            try await world.clock.sleep(for: .seconds(2))
            world.powerOn()
            return try await connected
        }
        #expect(connectedAt > .seconds(2))
        #expect(connectedAt < .seconds(5), "woke at \(connectedAt), not at the state change")
    }

    @Test func readsWritesAndNotificationsGoThrough() async throws {
        let (world, handle, _) = sinkWorld()
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let (read, echoed) = try await world.run {
            let transport = try await central.connector(for: handle.identifier).connectCoreBluetooth()
            let stream = try await transport.notifications(from: SinkDeviceModel.control)
            try await transport.write(Data([0xAB, 0xCD]), to: SinkDeviceModel.control, kind: .withResponse)
            var iterator = stream.makeAsyncIterator()
            let echoed = await iterator.next()
            let read = try await transport.read(SinkDeviceModel.control)
            await transport.disconnect()
            return (read, echoed)
        }
        #expect(read == Data("sink".utf8))
        #expect(echoed == Data([0xAB, 0xCD]))
    }

    /// Pushed notifications (decision 0066): echoes handed to the receiver in order on the
    /// bridge's queue, a second subscription finishing the first, cancelling switching them off
    /// (no echo reaches anyone), and a dropped link finishing the receiver.
    @Test func pushedNotificationsGoThroughUntilCancelledReplacedOrTheLinkDrops() async throws {
        let (world, handle, _) = sinkWorld()
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let log = PushLog()
        let receiver = { @Sendable (name: String) in
            NotificationReceiver(receive: { log.append("\(name) \($0.first ?? 0)") }, finished: { log.append("\(name) finished") })
        }
        try await world.run {
            let transport = try await central.connector(for: handle.identifier).connectCoreBluetooth()
            let first = try await transport.pushNotifications(from: SinkDeviceModel.control, to: receiver("a"))
            for value: UInt8 in 1...2 { try await transport.write(Data([value]), to: SinkDeviceModel.control, kind: .withResponse) }
            try await world.clock.sleep(for: .milliseconds(200))
            let second = try await transport.pushNotifications(from: SinkDeviceModel.control, to: receiver("b"))
            first.cancel()  // replaced already: ends nothing
            try await transport.write(Data([3]), to: SinkDeviceModel.control, kind: .withResponse)
            try await world.clock.sleep(for: .milliseconds(200))
            second.cancel()
            try await transport.write(Data([4]), to: SinkDeviceModel.control, kind: .withResponse)
            try await world.clock.sleep(for: .milliseconds(200))
            let third = try await transport.pushNotifications(from: SinkDeviceModel.control, to: receiver("c"))
            try await transport.write(Data([5]), to: SinkDeviceModel.control, kind: .withResponse)
            try await world.clock.sleep(for: .milliseconds(200))
            handle.dropLink(supervisionTimeout: true)
            try await world.clock.sleep(for: .milliseconds(200))
            third.cancel()
        }
        #expect(log.entries == ["a 1", "a 2", "a finished", "b 3", "c 5", "c finished"])
    }

    /// What pushed notifications reached, in order.
    final class PushLog: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var entries: [String] { lines.withLock { $0 } }
    }

    @Test func aDropFailsWhatIsOutstandingAndSaysWhy() async throws {
        let (world, handle, _) = sinkWorld()
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let (reason, writeError) = try await world.run {
            let transport = try await central.connector(for: handle.identifier).connectCoreBluetooth()
            let disconnections = transport.disconnections
            // A write with response in flight when the link drops: no callback will ever answer it.
            async let pending: TransportError? = {
                do throws(TransportError) {
                    try await transport.write(Data(count: 200), to: SinkDeviceModel.data, kind: .withResponse)
                    return nil
                } catch {
                    return error
                }
            }()
            try await world.clock.sleep(for: .milliseconds(1))
            handle.dropLink(supervisionTimeout: true)
            var iterator = disconnections.makeAsyncIterator()
            let reason = await iterator.next()
            return (reason, await pending)
        }
        #expect(reason?.description.contains("supervision timeout") == true)
        #expect(reason?.isLocal == false)
        if case .disconnected? = writeError?.kind {} else { Issue.record("expected a disconnected error, got \(String(describing: writeError))") }
    }

    @Test(arguments: [CBManagerAuthorization.denied, .restricted])
    func anAppWithoutPermissionIsToldWhereToGrantIt(authorization: CBManagerAuthorization) async throws {
        let (world, handle, _) = sinkWorld()
        world.authorization = authorization
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let (connectError, scanError) = try await world.run { () async throws -> (TransportError?, OTAError?) in
            var connectError: TransportError?
            var scanError: OTAError?
            do throws(TransportError) { _ = try await central.connector(for: handle.identifier).connect() } catch { connectError = error }
            do throws(OTAError) { _ = try await central.scanner(services: nil).discoveries() } catch { scanError = error }
            return (connectError, scanError)
        }
        #expect(connectError?.kind == .connectionFailed)
        #expect(connectError?.message.contains("Settings › Privacy & Security › Bluetooth") == true)
        #expect(scanError?.message.contains("not allowed") == true)
    }

    @Test func aPhoneWithoutBluetoothLESaysSo() async throws {
        let (world, handle, _) = sinkWorld()
        world.setRadio(.unsupported)
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let error = try await world.run { () async throws -> TransportError? in
            do throws(TransportError) {
                _ = try await central.connector(for: handle.identifier).connect()
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.message.contains("no Bluetooth LE") == true)
    }
}
#endif
