import Foundation
import OTACore
import OTATransportSimulator
import Synchronization
import Testing

@Suite struct LinkModelTests {
    @Test func airTimesMatchThePublishedFormulas() {
        #expect(PHY.le1M.airTime(payload: 0) == .microseconds(80))
        #expect(PHY.le1M.airTime(payload: 27) == .microseconds(296))
        #expect(PHY.le1M.airTime(payload: 251) == .microseconds(2088))
        #expect(PHY.le2M.airTime(payload: 0) == .microseconds(44))
        #expect(PHY.le2M.airTime(payload: 251) == .microseconds(1048))
        #expect(PHY.coded.airTime(payload: 27) == .microseconds(2448))
    }

    @Test func pairTimesMatchTheCapacityTable() {
        let oneM = LinkProfile(phy: .le1M, connectionInterval: .milliseconds(30), packetsPerEvent: nil, deviceMaximumMTU: 247, llPayload: 251)
        #expect(oneM.pairTime(central: 27, peripheral: 0) == .microseconds(676))
        #expect(oneM.pairTime(central: 251, peripheral: 0) == .microseconds(2468))
        var twoM = oneM
        twoM.phy = .le2M
        #expect(twoM.pairTime(central: 251, peripheral: 0) == .microseconds(1392))
    }

    /// The built-in profiles' capacity, against the figures derived in docs/simulator.md.
    @Test(arguments: [
        (DeviceProfile.esp32MTU23, 4000.0),
        (DeviceProfile.esp32MTU185, 24_266.7),
        (DeviceProfile.esp32S3MTU244OneM, 32_533.3),
        (DeviceProfile.esp32S3MTU244TwoM, 65_066.7),
        (DeviceProfile.nrf52840, 97_600.0),
    ])
    func theoreticalGoodput(profile: DeviceProfile, expected: Double) {
        let goodput = profile.link.theoreticalGoodput(valueLength: profile.link.deviceMaximumMTU - 3)
        #expect(abs(goodput - expected) < 1)
    }

    @Test func fullEventsAtMTU247MatchThePublishedBound() {
        // 2M, 15 ms, full events: floor(15000 / 1392) = 10 packets → 162.7 kB/s.
        let link = LinkProfile(phy: .le2M, connectionInterval: .milliseconds(15), packetsPerEvent: nil, deviceMaximumMTU: 247, llPayload: 251)
        #expect(abs(link.theoreticalGoodput(valueLength: 244) - 162_666.7) < 1)
    }

    @Test(arguments: [(23, 23), (100, 100), (517, 247), (247, 247)])
    func mtuIsTheSmallerOfOfferAndDeviceMaximum(offer: Int, expected: Int) async throws {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        let connection = try await world.simulation.run {
            try await SimulatedConnector(device: world.device, centralMTU: offer).connectSimulated()
        }
        #expect(connection.link.attMTU == expected)
        #expect(connection.link.maximumWriteLength(for: .withoutResponse) == expected - 3)
    }

    @Test func writeLongerThanTheLinkCarriesIsRefused() async throws {
        let world = SimulatorWorld(profile: .esp32MTU23)
        let error = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            do throws(TransportError) {
                try await connection.write(Data(count: 21), to: RecordingDevice.data, kind: .withoutResponse)
                return nil as TransportError?
            } catch {
                return error
            }
        }
        #expect(error?.kind == .valueTooLong(length: 21, maximum: 20))
    }

    /// A device that refuses writes starting with 0xEE and answers reads with the last value
    /// written, or with an error before any.
    final class Refusing: DeviceModel {
        private let last = Mutex<Data?>(nil)
        var services: [GATTServiceDefinition] { RecordingDevice().services }
        func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
            guard value.first != 0xEE else { return .writeNotPermitted }
            last.withLock { $0 = value }
            return .success
        }
        func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
            last.withLock { $0 }.map { .success($0) } ?? .failure(.readNotPermitted)
        }
    }

    /// An ATT error the device answers reaches the caller as that error, for a write and for a
    /// read, and the link goes on: the answers after it are the device's values, in order.
    @Test func attErrorsReachTheCallerAndTheLinkGoesOn() async throws {
        let simulation = Simulation(seed: 3)
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: Refusing(), simulation: simulation)
        let outcomes = try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            var outcomes: [String] = []
            func attempt(_ body: () async throws(TransportError) -> Data?) async {
                do throws(TransportError) {
                    outcomes.append(try await body().map { "value \(Array($0))" } ?? "written")
                } catch {
                    outcomes.append("\(error.kind): \(error.message)")
                }
            }
            await attempt { () throws(TransportError) in try await connection.read(RecordingDevice.control) }
            await attempt { () throws(TransportError) in
                try await connection.write(Data([0xEE, 1]), to: RecordingDevice.control, kind: .withResponse)
                return nil
            }
            await attempt { () throws(TransportError) in
                try await connection.write(Data([7, 8]), to: RecordingDevice.control, kind: .withResponse)
                return nil
            }
            await attempt { () throws(TransportError) in try await connection.read(RecordingDevice.control) }
            return outcomes
        }
        #expect(
            outcomes == [
                "\(TransportError.Kind.attError(ATTStatus.readNotPermitted.rawValue)): device answered the read with \(ATTStatus.readNotPermitted)",
                "\(TransportError.Kind.attError(ATTStatus.writeNotPermitted.rawValue)): device answered the write with \(ATTStatus.writeNotPermitted)",
                "written",
                "value [7, 8]",
            ])
    }

    @Test func naiveWriterLosesBytesWhenTheQueueIsFull() async throws {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        let stats = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            for index in 0..<100 {
                try connection.writeIgnoringFlowControl(Data(repeating: UInt8(index), count: 244), to: RecordingDevice.data)
            }
            try await world.simulation.clock.sleep(for: .seconds(2))
            return connection.stats
        }
        let depth = DeviceProfile.esp32S3MTU244TwoM.link.writeQueueDepth
        #expect(stats.writesDropped == 100 - depth)
        #expect(world.model.received.count == depth * 244)
    }

    @Test func rejectingStackThrowsInsteadOfDropping() async throws {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        let refused = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device, overflow: .reject).connectSimulated()
            var refused = 0
            for _ in 0..<40 {
                do { try connection.writeIgnoringFlowControl(Data(count: 244), to: RecordingDevice.data) } catch { refused += 1 }
            }
            return refused
        }
        #expect(refused == 40 - DeviceProfile.esp32S3MTU244TwoM.link.writeQueueDepth)
    }

    /// ``ImmediateWriting``: a write is taken at once while the queue has room, refused (nothing
    /// queued) while it is full, a writer waiting in `write` keeps its turn, a refused write is
    /// refused with the link down; one the link could never take throws as `write` does.
    @Test func immediateWritesTakeTheQueuesRoomAndNoMore() async throws {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        let depth = DeviceProfile.esp32S3MTU244TwoM.link.writeQueueDepth
        let (taken, afterWaiter, afterDrop, errors, stats) = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            var taken = 0
            for index in 0..<(depth + 5) {
                if try connection.writeWithoutResponseIfReady(Data(repeating: UInt8(index), count: 244), to: RecordingDevice.data) { taken += 1 }
            }
            // A writer waiting for room, and the queue still full: refused, and the waiter's
            // bytes follow the queued ones.
            async let waiting: Void = connection.write(Data(repeating: 0xEE, count: 244), to: RecordingDevice.data, kind: .withoutResponse)
            await Task.yield()
            let afterWaiter = try connection.writeWithoutResponseIfReady(Data(count: 244), to: RecordingDevice.data)
            try await waiting
            var errors: [TransportError.Kind?] = []
            for (value, characteristic) in [(Data(count: 245), RecordingDevice.data), (Data(count: 4), RecordingDevice.control)] {
                do throws(TransportError) {
                    _ = try connection.writeWithoutResponseIfReady(value, to: characteristic)
                    errors.append(nil)
                } catch {
                    errors.append(error.kind)
                }
            }
            try await world.simulation.clock.sleep(for: .seconds(1))
            connection.drop(DisconnectReason("supervision timeout"))
            let afterDrop = try connection.writeWithoutResponseIfReady(Data(count: 244), to: RecordingDevice.data)
            return (taken, afterWaiter, afterDrop, errors, connection.stats)
        }
        #expect(taken == depth)
        #expect(!afterWaiter)
        #expect(!afterDrop)
        #expect(errors.count == 2 && errors[0] == .valueTooLong(length: 245, maximum: 244))
        #expect(errors.count == 2 && errors[1] != nil, "the control point takes no write without response")
        #expect(stats.writesDropped == 0)
        let expected = Data((0..<depth).flatMap { Array(repeating: UInt8($0), count: 244) }) + Data(repeating: 0xEE, count: 244)
        #expect(world.model.received == expected)
    }

    @Test func cooperativeWriterNeverLosesAByte() async throws {
        let world = SimulatorWorld(profile: .esp32MTU23)
        let stats = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            for index in 0..<500 {
                try await connection.write(Data(repeating: UInt8(truncatingIfNeeded: index), count: 20), to: RecordingDevice.data, kind: .withoutResponse)
            }
            try await world.simulation.clock.sleep(for: .seconds(2))
            return connection.stats
        }
        #expect(stats.writesDropped == 0)
        #expect(stats.writerWaits > 0)
        #expect(world.model.received.count == 500 * 20)
        #expect(world.model.received == Data((0..<500).flatMap { Array(repeating: UInt8(truncatingIfNeeded: $0), count: 20) }))
    }

    @Test func dataRateFollowsThePacketsPerEventCap() async throws {
        let world = SimulatorWorld(profile: .esp32MTU23, packetErrorRate: 0)
        let elapsed = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            let start = world.simulation.now
            for _ in 0..<600 {
                try await connection.write(Data(count: 20), to: RecordingDevice.data, kind: .withoutResponse)
            }
            while world.model.received.count < 600 * 20 {
                try await world.simulation.clock.sleep(for: .milliseconds(1))
            }
            return world.simulation.now - start
        }
        // 6 packets of 20 bytes per 30 ms event: 600 writes take 100 events ≈ 3 s.
        #expect(elapsed > .milliseconds(2950) && elapsed < .milliseconds(3050))
    }

    @Test func notificationsArriveOnlyWhenSubscribed() async throws {
        let world = SimulatorWorld(profile: .nrf52840)
        let received = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            // Not subscribed: the echo is not sent.
            try await connection.write(Data([1]), to: RecordingDevice.control, kind: .withResponse)
            let stream = try await connection.notifications(from: RecordingDevice.control)
            try await connection.write(Data([2]), to: RecordingDevice.control, kind: .withResponse)
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(received == Data([2]))
    }

    @Test func disconnectFailsAWaitingWriterAndEndsNotifications() async throws {
        let world = SimulatorWorld(profile: .esp32MTU23)
        let (error, ended) = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            let stream = try await connection.notifications(from: RecordingDevice.control)
            world.simulation.schedule(at: world.simulation.now + .milliseconds(100)) {
                world.device.dropConnection()
            }
            var failure: TransportError?
            do throws(TransportError) {
                for _ in 0..<10_000 {
                    try await connection.write(Data(count: 20), to: RecordingDevice.data, kind: .withoutResponse)
                }
            } catch {
                failure = error
            }
            var iterator = stream.makeAsyncIterator()
            return (failure, await iterator.next() == nil)
        }
        guard case .disconnected = error?.kind else {
            Issue.record("expected a disconnect, got \(String(describing: error))")
            return
        }
        #expect(ended)
        #expect(world.device.connection == nil)
    }

    /// The link's timers hold it strongly (a weak reference cost every retain and release of it
    /// the runtime's slow path): once it drops and the timers still set then have fired, nothing
    /// holds it, in the middle of a stream, a round trip and a notification subscription alike.
    @Test(arguments: [false, true])
    func aDroppedLinkIsReleasedOnceItsTimersHaveFired(byTheDevice: Bool) async throws {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        let released = try await world.simulation.run {
            let link = WeakBox()
            try await {
                let connection = try await SimulatedConnector(device: world.device).connectSimulated()
                link.connection = connection
                let stream = try await connection.notifications(from: RecordingDevice.control)
                let pushed = try await connection.pushNotifications(
                    from: RecordingDevice.control, to: NotificationReceiver(receive: { _ in }, finished: {}))
                try await connection.write(Data([1]), to: RecordingDevice.control, kind: .withResponse)
                for _ in 0..<20 {
                    try await connection.write(Data(count: 200), to: RecordingDevice.data, kind: .withoutResponse)
                }
                // Events and deliveries are still set: the queue is full and the device busy.
                if byTheDevice { world.device.dropConnection() } else { await connection.disconnect() }
                _ = (stream, pushed)
            }()
            try await world.simulation.clock.sleep(for: .seconds(1))
            return link.connection == nil
        }
        #expect(released, "a dropped link was kept alive")
    }

    /// Pushed notifications (decision 0066) arrive in order, only while subscribed: a second
    /// subscription finishes the first, cancelling stops delivery and disables them (the device
    /// sees no subscriber), and a dropped link finishes the receiver once.
    @Test func pushedNotificationsArriveInOrderUntilCancelledReplacedOrTheLinkDrops() async throws {
        let world = SimulatorWorld(profile: .nrf52840)
        let log = PushLog()
        let receiver = { @Sendable (name: String) in
            NotificationReceiver(
                receive: { value in log.append("\(name) \(value.first ?? 0)") },
                finished: { log.append("\(name) finished") })
        }
        let subscribed = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            var subscribed: [Bool] = []
            let first = try await connection.pushNotifications(from: RecordingDevice.control, to: receiver("a"))
            for value: UInt8 in 1...3 { try await connection.write(Data([value]), to: RecordingDevice.control, kind: .withResponse) }
            try await world.simulation.clock.sleep(for: .milliseconds(200))
            // Another subscription to the characteristic replaces the first, which finishes.
            let second = try await connection.pushNotifications(from: RecordingDevice.control, to: receiver("b"))
            try await connection.write(Data([4]), to: RecordingDevice.control, kind: .withResponse)
            try await world.simulation.clock.sleep(for: .milliseconds(200))
            first.cancel()  // ends nothing: it was replaced
            subscribed.append(connection.isSubscribed(to: RecordingDevice.control))
            second.cancel()
            subscribed.append(connection.isSubscribed(to: RecordingDevice.control))
            try await connection.write(Data([5]), to: RecordingDevice.control, kind: .withResponse)
            try await world.simulation.clock.sleep(for: .milliseconds(200))
            // A third, then the link drops: it finishes once, and a cancel after that is harmless.
            let third = try await connection.pushNotifications(from: RecordingDevice.control, to: receiver("c"))
            try await connection.write(Data([6]), to: RecordingDevice.control, kind: .withResponse)
            try await world.simulation.clock.sleep(for: .milliseconds(200))
            world.device.dropConnection()
            try await world.simulation.clock.sleep(for: .milliseconds(200))
            third.cancel()
            return subscribed
        }
        #expect(subscribed == [true, false])
        #expect(log.entries == ["a 1", "a 2", "a 3", "a finished", "b 4", "c 6", "c finished"])
    }

    /// A characteristic's subscriber changes between kinds, receiver → stream → receiver: each
    /// notification reaches the subscriber of its time, never one replaced before it (the link
    /// keeps the last receiver found to hand notifications on without copying the subscriber).
    @Test func notificationsFollowTheSubscriberAcrossReceiversAndStreams() async throws {
        let world = SimulatorWorld(profile: .nrf52840)
        let log = PushLog()
        let receiver = { @Sendable (name: String) in
            NotificationReceiver(receive: { value in log.append("\(name) \(value.first ?? 0)") }, finished: {})
        }
        let streamed = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            let write = { (value: UInt8) in
                try await connection.write(Data([value]), to: RecordingDevice.control, kind: .withResponse)
                try await world.simulation.clock.sleep(for: .milliseconds(200))
            }
            let first = try await connection.pushNotifications(from: RecordingDevice.control, to: receiver("a"))
            try await write(1)
            try await write(2)
            let stream = try await connection.notifications(from: RecordingDevice.control)
            try await write(3)
            try await write(4)
            var iterator = stream.makeAsyncIterator()
            let third = await iterator.next()
            let fourth = await iterator.next()
            let last = try await connection.pushNotifications(from: RecordingDevice.control, to: receiver("b"))
            try await write(5)
            first.cancel()
            last.cancel()
            return [third, fourth].map { $0?.first }
        }
        #expect(log.entries == ["a 1", "a 2", "b 5"])
        #expect(streamed == [3, 4])
    }

    /// What pushed notifications reached, in order.
    final class PushLog: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var entries: [String] { lines.withLock { $0 } }
    }

    @Test func unreachableDeviceIsNotConnected() async throws {
        let world = SimulatorWorld(profile: .esp32MTU23)
        world.device.isReachable = false
        let outcome = try await world.simulation.run {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    _ = try? await SimulatedConnector(device: world.device).connectSimulated()
                    return true
                }
                group.addTask {
                    try await world.simulation.clock.sleep(for: .seconds(30))
                    return false
                }
                let first = try await group.next()!
                group.cancelAll()
                return first
            }
        }
        #expect(outcome == false)
    }
}

@Suite("SimulatedAdapter")
struct SimulatedAdapterTests {
    @Test("a connect beyond the adapter's limit is refused as a controller refuses it; a dropped link frees its slot")
    func connectionLimit() async throws {
        let simulation = Simulation(seed: 3)
        let adapter = SimulatedAdapter(name: "hci0", connectionLimit: 2)
        let devices = (0..<3).map { _ in SimulatedDevice(profile: .nrf52840, model: RecordingDevice(), simulation: simulation) }
        let outcome = try await simulation.run { () async -> [String] in
            var outcome: [String] = []
            var links: [SimulatedConnection] = []
            for device in devices {
                do {
                    links.append(try await SimulatedConnector(device: device, adapter: adapter).connectSimulated())
                    outcome.append("up")
                } catch {
                    outcome.append("\(error)")
                }
            }
            links[0].drop(DisconnectReason("test"))
            do {
                _ = try await SimulatedConnector(device: devices[2], adapter: adapter).connectSimulated()
                outcome.append("up")
            } catch {
                outcome.append("\(error)")
            }
            return outcome
        }
        #expect(outcome[0] == "up" && outcome[1] == "up" && outcome[3] == "up")
        #expect(outcome[2].contains("connection limit exceeded (2 of 2 in use)"))
        #expect(adapter.peakConnections == 2)
        #expect(adapter.refusedConnects == 1)
        #expect(adapter.connectionCount == 2)
    }

    @Test("two busy links on one adapter share its airtime: each takes about twice as long as one alone")
    func sharedAirtime() async throws {
        func stream(links count: Int, adapter: SimulatedAdapter?) async throws -> Duration {
            let simulation = Simulation(seed: 5)
            var profile = DeviceProfile.nrf52840
            profile.link.packetsPerEvent = nil
            profile.link.packetErrorRate = 0
            let devices = (0..<count).map { _ in SimulatedDevice(profile: profile, model: RecordingDevice(), simulation: simulation) }
            return try await simulation.run {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for device in devices {
                        group.addTask {
                            let link = try await SimulatedConnector(device: device, adapter: adapter).connectSimulated()
                            for _ in 0..<200 { try await link.write(Data(repeating: 1, count: 244), to: RecordingDevice.data, kind: .withoutResponse) }
                            try await link.write(Data([0]), to: RecordingDevice.control, kind: .withResponse)
                        }
                    }
                    try await group.waitForAll()
                }
                return simulation.now
            }
        }
        let alone = try await stream(links: 1, adapter: SimulatedAdapter(connectionLimit: 4))
        let shared = try await stream(links: 2, adapter: SimulatedAdapter(connectionLimit: 4))
        let separateRadios = try await stream(links: 2, adapter: nil)
        let setup = DeviceProfile.nrf52840.link.connectionSetupTime
        let ratio = (shared - setup) / (alone - setup)
        #expect(ratio > 1.8 && ratio < 2.2, "ratio \(ratio)")
        #expect((separateRadios - setup) / (alone - setup) < 1.1)
    }
}

/// A weak reference to a link, to see whether anything still holds it.
private final class WeakBox: @unchecked Sendable {
    // @unchecked: set and read by one task.
    weak var connection: SimulatedConnection?
}
