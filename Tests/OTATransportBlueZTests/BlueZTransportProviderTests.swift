import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// The BlueZ provider through a scripted org.bluez: what `ota update`, `abort`, `scan` and
/// `--dry-run` reach for a Bluetooth address.
@Suite struct BlueZTransportProviderTests {
    /// A protocol whose abort writes one command to the fake's CONTROL characteristic.
    struct ControlAbort: AbortableUpdateProtocol {
        var requirements: [CharacteristicRequirement] {
            [CharacteristicRequirement("control", FakeBlueZ.control, properties: .write)]
        }

        func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
            throw OTAError(.internal, "not used")
        }

        func abort(context: UpdateContext) async throws(OTAError) -> AbortOutcome {
            try await context.write(Data([0xA5]), to: FakeBlueZ.control, kind: .withResponse, purpose: "ABORT")
            return .unconfirmed
        }
    }

    /// The provider as the tool sees it: any provider.
    static func provider(on bus: PrivateBus) -> any TransportProvider {
        var configuration = BlueZConnector.Configuration()
        configuration.discoveryTimeout = .seconds(2)
        configuration.servicesResolvedTimeout = .seconds(5)
        configuration.callTimeout = .seconds(5)
        return BlueZTransportProvider(bus: .address(bus.address), configuration: configuration)
    }

    @Test func recognisesBluetoothAddressesOnly() {
        let provider = BlueZTransportProvider()
        #expect(provider.name == "bluez")
        #expect(provider.recognises("00:aa:01:01:00:01"))
        #expect(!provider.recognises("sim:bolt-lock"))
        #expect(!provider.recognises("AA:BB:CC:DD"))
    }

    @Test func abortReachesTheDeviceThroughTheProvider() async throws {
        try await FakeBlueZ.with { bus, fake in
            let device = try await Self.provider(on: bus)
                .device(at: FakeBlueZ.address, options: TransportOptions(["--adapter": ["hci0"]]))
            #expect(device.summary == "00:AA:01:01:00:01 through BlueZ (hci0)")
            #expect(device.firmwareProtocol == nil)
            let reached = try await device.withSession(SessionRequest(protocolName: "control-abort")) {
                session throws(OTAError) in
                #expect(session.executor == nil)
                _ = try await session.run { () async throws(OTAError) in
                    try await UpdateEngine(clock: session.clock).abort(using: ControlAbort(), connector: session.connector)
                }
                return session.connector.deviceDescription
            }
            #expect(reached == "00:AA:01:01:00:01 via hci0")
            #expect(fake.writes.contains(FakeBlueZ.Write(path: FakeBlueZ.controlPath, value: [0xA5], type: "request")))
            #expect(fake.calls.first == "Device1.Connect")
            #expect(await eventually { fake.calls.last == "Device1.Disconnect" })
        }
    }

    @Test func writePathOptionChoosesWriteValue() async throws {
        try await FakeBlueZ.with { bus, _ in
            let provider = Self.provider(on: bus)
            do throws(OTAError) {
                _ = try await provider.device(at: FakeBlueZ.address, options: TransportOptions(["--write-path": ["fast"]]))
                Issue.record("a bad --write-path was accepted")
            } catch {
                #expect(error.code == .invalidParameter)
                #expect(error.message == "--write-path 'fast' is not 'auto', 'acquire', 'writevalue' or 'request'")
            }
            let device = try await provider.device(
                at: FakeBlueZ.address, options: TransportOptions(["--write-path": ["writevalue"]]))
            let connector = try #require(device as? BlueZDevice).connector
            let transport = try await connector.connectTransport()
            #expect(
                transport.writePaths == [
                    FakeBlueZ.data: .writeValueCommand(reason: "AcquireWrite is turned off in the configuration")
                ])
            await transport.disconnect()
        }
    }

    @Test func socketBufferOptionSetsTheSendBuffer() async throws {
        try await FakeBlueZ.with { bus, _ in
            let provider = Self.provider(on: bus)
            for bad in ["0", "big", "-1"] {
                do throws(OTAError) {
                    _ = try await provider.device(at: FakeBlueZ.address, options: TransportOptions(["--socket-buffer": [bad]]))
                    Issue.record("--socket-buffer \(bad) was accepted")
                } catch {
                    #expect(error.code == .invalidParameter)
                    #expect(error.message == "--socket-buffer '\(bad)' is not a size in bytes (1...16777216) or 'system'")
                }
            }
            let small = try await provider.device(at: FakeBlueZ.address, options: TransportOptions(["--socket-buffer": ["16384"]]))
            #expect(try #require(small as? BlueZDevice).connector.configuration.acquiredSocketSendBuffer == 16384)
            let system = try await provider.device(at: FakeBlueZ.address, options: TransportOptions(["--socket-buffer": ["system"]]))
            let connector = try #require(system as? BlueZDevice).connector
            #expect(connector.configuration.acquiredSocketSendBuffer == nil)
            let transport = try await connector.connectTransport()
            // The kernel's own buffer (net.core.wmem_default), far larger than the default bound.
            #expect(try #require(transport.statistics.socketQueueLimit) > 8192)
            await transport.disconnect()
        }
    }

    @Test func inFlightOptionSetsTheDeliveryWindow() async throws {
        try await FakeBlueZ.with { bus, _ in
            let provider = Self.provider(on: bus)
            for bad in ["0", "1023", "lots", "16777217"] {
                do throws(OTAError) {
                    _ = try await provider.device(at: FakeBlueZ.address, options: TransportOptions(["--in-flight": [bad]]))
                    Issue.record("--in-flight \(bad) was accepted")
                } catch {
                    #expect(error.code == .invalidParameter)
                    #expect(error.message == "--in-flight '\(bad)' is not a size in bytes (1024...16777216) or 'off'")
                }
            }
            let standard = try await provider.device(at: FakeBlueZ.address, options: TransportOptions([:]))
            #expect(try #require(standard as? BlueZDevice).connector.configuration.deliveryWindow == 16_384)
            let wide = try await provider.device(at: FakeBlueZ.address, options: TransportOptions(["--in-flight": ["65536"]]))
            #expect(try #require(wide as? BlueZDevice).connector.configuration.deliveryWindow == 65_536)
            let off = try await provider.device(at: FakeBlueZ.address, options: TransportOptions(["--in-flight": ["off"]]))
            #expect(try #require(off as? BlueZDevice).connector.configuration.deliveryWindow == nil)
        }
    }

    @Test func listensForTheAdvertisementOnlyWhenTheCatalogMustDecide() async throws {
        try await FakeBlueZ.with { bus, fake in
            let device = try await Self.provider(on: bus).device(at: FakeBlueZ.address, options: TransportOptions())
            #expect(try await device.advertisement(chosenProtocol: "framed") == nil)
            #expect(fake.calls.isEmpty)
            let advertisement = try await device.advertisement(chosenProtocol: nil)
            #expect(advertisement?.name == "ota-lamp")
            #expect(advertisement?.serviceUUIDs == [FakeBlueZ.serviceUUID])
            #expect(fake.calls.contains("Adapter1.StartDiscovery"))
        }
    }

    @Test func scannerReportsDiscoveredDevicesForTheCatalog() async throws {
        var script = FakeBlueZ.Script()
        script.deviceKnown = false
        try await FakeBlueZ.with(script) { bus, fake in
            let scanner = try Self.provider(on: bus).scanner(options: TransportOptions(["--adapter": ["hci0"]]))
            let heard = try await scanner.listen(for: .seconds(30)) { $0.address == FakeBlueZ.address }
            #expect(heard.map(\.address) == [FakeBlueZ.address])
            #expect(heard.first?.advertisement.rssi == -52)
            #expect(await eventually { fake.calls.last == "Adapter1.StopDiscovery" })
        }
    }
}
