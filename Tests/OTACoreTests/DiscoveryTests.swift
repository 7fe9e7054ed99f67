import Foundation
import OTACore
import Synchronization
import Testing

/// Scanning as an AsyncSequence of ``DiscoveredDevice``, and the provider registry.
@Suite struct DiscoveryTests {
    /// Yields `devices`, then waits on `idle` until cancelled (a radio), or finishes.
    struct ScriptedScanner: DeviceScanner {
        let clock: any Clock<Duration>
        let devices: [DiscoveredDevice]
        let idle: TestClock?
        let drained = Flag()

        init(clock: any Clock<Duration>, devices: [DiscoveredDevice], idle: TestClock?) {
            self.clock = clock
            self.devices = devices
            self.idle = idle
        }

        var isDrained: Bool { drained.isSet }

        func discoveries() -> AsyncThrowingStream<DiscoveredDevice, any Error> {
            let queue = Mutex(devices)
            let (idle, drained) = (idle, drained)
            return AsyncThrowingStream {
                if let next = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return next }
                drained.set()
                guard let idle else { return nil }
                try await idle.sleep(for: .seconds(3600))
                return nil
            }
        }
    }

    static func device(_ address: String, name: String, rssi: Int) -> DiscoveredDevice {
        DiscoveredDevice(address: address, advertisement: Advertisement(name: name, rssi: rssi))
    }

    @Test func listensUntilTheWindowClosesOnTheScannersClock() async throws {
        let clock = TestClock()
        let idle = TestClock()
        let scanner = ScriptedScanner(
            clock: clock,
            devices: [
                Self.device("A", name: "lamp", rssi: -70), Self.device("B", name: "lock", rssi: -60),
                Self.device("A", name: "lamp", rssi: -50),
            ], idle: idle)
        let listening = Task { try await scanner.listen(for: .seconds(5)) }
        #expect(await eventually { scanner.isDrained && clock.sleeperCount == 1 && idle.sleeperCount == 1 })
        clock.advance(by: .seconds(5))
        let heard = try await listening.value
        // Each device once, latest advertisement, in the order first heard.
        #expect(heard == [Self.device("A", name: "lamp", rssi: -50), Self.device("B", name: "lock", rssi: -60)])
        #expect(idle.sleeperCount == 0)  // listening stopped
    }

    @Test func stopsEarlyOnceTheDeviceIsHeard() async throws {
        let clock = TestClock()
        let scanner = ScriptedScanner(
            clock: clock, devices: [Self.device("A", name: "lamp", rssi: -70), Self.device("B", name: "lock", rssi: -60)],
            idle: TestClock())
        let advertisement = try await scanner.advertisement(of: "B", within: .seconds(5))
        #expect(advertisement == Advertisement(name: "lock", rssi: -60))
        #expect(clock.now.offset == .zero)
    }

    @Test func aFiniteListEndsTheScanAtOnce() async throws {
        let scanner = ScriptedScanner(clock: TestClock(), devices: [Self.device("sim:a", name: "a", rssi: -1)], idle: nil)
        #expect(try await scanner.listen(for: .seconds(60)).map(\.address) == ["sim:a"])
        #expect(try await scanner.advertisement(of: "sim:b", within: .seconds(60)) == nil)
    }

    @Test func aScanThatFailsSaysSo() async throws {
        struct Failing: DeviceScanner {
            var clock: any Clock<Duration> { TestClock() }
            func discoveries() -> AsyncThrowingStream<DiscoveredDevice, any Error> {
                AsyncThrowingStream { $0.finish(throwing: TransportError(.connectionFailed, "bluetoothd went away")) }
            }
        }
        let error = await #expect(throws: OTAError.self) { try await Failing().listen(for: .seconds(1)) }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message == "scanning: bluetoothd went away")
    }
}

/// A flag set once, read from any task.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// Which provider an address goes to.
@Suite struct TransportRegistryTests {
    struct Scheme: TransportProvider {
        var name: String
        var addressForm: String
        func recognises(_ address: String) -> Bool { address.hasPrefix(name + ":") }
        func device(at address: String, options: TransportOptions) throws(OTAError) -> any TransportDevice {
            throw OTAError(.internal, "not used")
        }
        func scanner(options: TransportOptions) throws(OTAError) -> any DeviceScanner {
            throw OTAError(.internal, "not used")
        }
    }

    @Test func theFirstProviderThatRecognisesTheAddressReachesIt() throws {
        let registry = TransportRegistry([
            Scheme(name: "udp", addressForm: "a UDP address (udp:HOST:PORT)"),
            Scheme(name: "sim", addressForm: "a simulated device (sim:NAME)"),
        ])
        #expect(try registry.provider(for: "sim:lamp").name == "sim")
        #expect(try registry.provider(for: "udp:10.0.0.1:1337").name == "udp")
        #expect(try registry.provider(named: "udp").name == "udp")
    }

    @Test(arguments: [
        (1, "device 'lamp' is not a A"),
        (2, "device 'lamp' is neither a A nor a B"),
        (3, "device 'lamp' is none of a A, a B or a C"),
    ])
    func anUnknownAddressNamesTheFormsThisBuildTakes(count: Int, message: String) {
        let registry = TransportRegistry(
            ["A", "B", "C"].prefix(count).map { Scheme(name: $0.lowercased(), addressForm: "a \($0)") })
        let error = #expect(throws: OTAError.self) { try registry.provider(for: "lamp") }
        #expect(error?.code == .invalidParameter)
        #expect(error?.message == message)
        #expect(throws: OTAError.self) { try registry.provider(named: "serial") }
    }
}
