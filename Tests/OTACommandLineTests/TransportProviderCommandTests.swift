import Foundation
import OTACommandLine
import OTACore
import Synchronization
import Testing

/// A transport the tool has never heard of, registered in a ``ToolEnvironment``: `update`,
/// `abort`, `scan` and `--dry-run` reach its `fake:NAME` addresses with no change to the tool.
/// Underneath, its devices are the simulator's (so that an update really runs).
@Suite struct TransportProviderCommandTests {
    /// What the tool asked the fake transport for, in order.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func record(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    struct FakeProvider: TransportProvider {
        let simulator: any TransportProvider
        let journal: Journal

        var name: String { "fake" }
        var addressForm: String { "a fake device (fake:NAME)" }
        func recognises(_ address: String) -> Bool { address.hasPrefix("fake:") }

        func device(at address: String, options: TransportOptions) async throws(OTAError) -> any TransportDevice {
            journal.record("device \(address)")
            let inner = try await simulator.device(at: "sim:" + address.dropFirst(5), options: options)
            return FakeDevice(address: address, inner: inner, journal: journal)
        }

        func scanner(options: TransportOptions) throws(OTAError) -> any DeviceScanner {
            journal.record("scanner")
            return FakeScanner(inner: try simulator.scanner(options: options))
        }
    }

    struct FakeDevice: TransportDevice {
        let address: String
        let inner: any TransportDevice
        let journal: Journal

        var summary: String { "\(address) through the fake transport" }
        var firmwareProtocol: String? { inner.firmwareProtocol }

        func advertisement(chosenProtocol: String?) async throws(OTAError) -> Advertisement? {
            journal.record("advertisement")
            return try await inner.advertisement(chosenProtocol: chosenProtocol)
        }

        func check(_ images: [FirmwareImage]) throws(OTAError) {
            try inner.check(images)
        }

        func withSession<R>(
            _ request: SessionRequest,
            _ body: (any TransportSession) async throws(OTAError) -> R
        ) async throws(OTAError) -> R {
            journal.record("session \(request.protocolName) \(request.imageSize) bytes")
            return try await inner.withSession(request, body)
        }
    }

    struct FakeScanner: DeviceScanner {
        let inner: any DeviceScanner
        var clock: any Clock<Duration> { inner.clock }

        func discoveries() async throws(OTAError) -> AsyncThrowingStream<DiscoveredDevice, any Error> {
            let heard = try await inner.discoveries()
            let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveredDevice.self, throwing: (any Error).self)
            let relay = Task {
                do {
                    for try await device in heard {
                        continuation.yield(DiscoveredDevice(address: "fake:" + device.address.dropFirst(4), advertisement: device.advertisement))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in relay.cancel() }
            return stream
        }
    }

    /// The standard tool with the fake transport registered first.
    static func environment(_ journal: Journal) -> ToolEnvironment {
        var environment = ToolEnvironment.standard
        let simulator = SimulatorTransportProvider(registry: environment.registry, fleet: environment.fleet)
        environment.addedTransports.append(FakeProvider(simulator: simulator, journal: journal))
        return environment
    }

    static func run(_ arguments: [String], _ journal: Journal) async -> (code: Int32, streams: CapturedStreams) {
        let streams = CapturedStreams()
        let code = await CommandLineTool.run(arguments, streams: streams, environment: environment(journal))
        return (code, streams)
    }

    @Test func dryRunExplainsThroughTheProviderWithoutASession() async throws {
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        let journal = Journal()
        let (code, streams) = await Self.run(["update", image.path, "--device", "fake:bolt-lock", "--dry-run"], journal)
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.outputLines.first == "would update fake:bolt-lock through the fake transport")
        #expect(streams.standardOutput.contains("because: fake:bolt-lock matches family 'framed-ota' (built-in catalog): advertises 4f544200"))
        #expect(streams.standardOutput.contains("protocol: framed"))
        #expect(journal.all == ["device fake:bolt-lock", "advertisement"])
    }

    @Test func updateRunsInTheProvidersSession() async throws {
        let image = try temporaryImage(size: 40_000)
        defer { try? FileManager.default.removeItem(at: image) }
        let journal = Journal()
        let (code, streams) = await Self.run(["update", image.path, "--device", "fake:bolt-lock"], journal)
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput.hasPrefix("updated fake:bolt-lock with \(image.lastPathComponent) (40000 bytes"))
        #expect(streams.standardOutput.contains(" over framed in "))
        #expect(journal.all == ["device fake:bolt-lock", "advertisement", "session framed 40000 bytes"])
    }

    @Test func abortRunsInTheProvidersSession() async throws {
        let image = try temporaryImage(size: 100_000)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("ota-sim-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: image)
            try? FileManager.default.removeItem(at: state)
        }
        let journal = Journal()
        let first = await Self.run(
            ["update", image.path, "--device", "fake:bolt-lock", "--sim-state", state.path, "--sim-disconnect-at", "60%", "--resume-attempts", "0"],
            journal)
        #expect(first.code == 5)
        let abort = await Self.run(["abort", "--device", "fake:bolt-lock", "--sim-state", state.path], journal)
        #expect(abort.code == 0, "\(abort.streams.standardError)")
        // The fake reaches its device through the simulator, whose connector names it.
        #expect(abort.streams.standardOutput == "aborted the update in progress on sim:bolt-lock (it held 58020 of 100000 bytes)\n")
        #expect(journal.all.suffix(2) == ["device fake:bolt-lock", "session framed 0 bytes"])
        // The aborted device starts over: the whole image is sent again.
        let again = await Self.run(["update", image.path, "--device", "fake:bolt-lock", "--sim-state", state.path, "--json"], journal)
        #expect(again.code == 0)
        let result = try #require(again.streams.outputLines.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.utf8)) as? [String: Any])
        #expect((object["bytesSent"] as? Int ?? 0) >= 100_000)
    }

    @Test func scanListsTheProvidersDevicesWithTheirFamilies() async throws {
        let journal = Journal()
        let (code, streams) = await Self.run(["scan", "--transport", "fake", "--json"], journal)
        #expect(code == 0, "\(streams.standardError)")
        let objects = try streams.outputLines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.map { $0["address"] as? String } == ["fake:acme-sensor", "fake:bolt-lock", "fake:nrf-tracker", "fake:zephyr-sensor", "fake:esp-lamp"])
        #expect(objects.map { $0["protocol"] as? String } == ["generic", "framed", "nordic-dfu", "mcumgr", "esp-ble-ota"])
        #expect(journal.all == ["scanner"])
    }

    /// The standard transports follow the environment: a fleet device an app adds after
    /// ``ToolEnvironment/standard`` (as lumen-ota does) is reachable.
    @Test func theSimulatorServesTheFleetAsTheAppLeftIt() async throws {
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        var environment = ToolEnvironment.standard
        var extra = try #require(environment.fleet.first)
        extra.name = "extra-sensor"
        environment.additionalFleet.append(extra)
        let streams = CapturedStreams()
        let code = await CommandLineTool.run(["update", image.path, "--device", "sim:extra-sensor", "--dry-run"], streams: streams, environment: environment)
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.standardOutput.contains("protocol: generic"))
    }

    @Test(arguments: [
        (["update", "IMAGE", "--protocol", "generic", "--device", "lamp"], "device 'lamp' is none of a fake device (fake:NAME), "),
        (["scan", "--transport", "usb"], "no transport 'usb' (available: fake, "),
        (["abort", "--device", "fake:nope", "--protocol", "framed"], "no simulated device or profile 'nope'"),
    ])
    func refusalsAreOneLineUsageErrors(arguments: [String], fragment: String) async throws {
        let image = try temporaryImage(size: 100)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await Self.run(arguments.map { $0 == "IMAGE" ? image.path : $0 }, Journal())
        #expect(code == 2)
        #expect(streams.standardError.hasPrefix("ota: error: "))
        #expect(streams.standardError.contains(fragment), "\(streams.standardError)")
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
    }

    /// A dry run on a Bluetooth address with a chosen protocol goes to BlueZ and listens to nothing.
    @Test func dryRunOnABluetoothAddressNeedsNoRadio() async throws {
        let image = try temporaryImage(size: 1000)
        defer { try? FileManager.default.removeItem(at: image) }
        let (code, streams) = await runTool(["update", image.path, "--protocol", "generic", "--device", "00:aa:01:01:00:01", "--adapter", "hci1", "--dry-run"])
        #expect(code == 0, "\(streams.standardError)")
        #expect(streams.outputLines.first == "would update 00:AA:01:01:00:01 through BlueZ (hci1)")
        #expect(streams.standardOutput.contains("protocol: generic"))
        #expect(streams.standardError.isEmpty)
    }

    /// `ota abort` on a Bluetooth address goes to BlueZ like `ota update` does (here no bluetoothd
    /// answers for it): one line, "device unavailable", not "not supported".
    @Test func abortReachesARealDeviceThroughBlueZ() async throws {
        let (code, streams) = await runTool(["abort", "--device", "AA:BB:CC:DD:EE:FF", "--protocol", "framed"])
        #expect(code == 4, "\(streams.standardError)")
        #expect(streams.standardError.hasPrefix("ota: error: "))
        #expect(streams.standardError.contains("AA:BB:CC:DD:EE:FF") || streams.standardError.contains("bluetoothd"))
        #expect(!streams.standardError.contains("not supported"))
        #expect(streams.standardError.filter { $0 == "\n" }.count == 1)
    }
}
