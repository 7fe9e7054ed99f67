#if os(Linux)
import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// Connecting by address through a scripted org.bluez.
@Suite(.needsLibDBus) struct BlueZConnectorTests {
    @Test func connectsAndDiscoversTheCharacteristics() async throws {
        try await FakeBlueZ.with { bus, fake in
            let connector = FakeBlueZ.connector(on: bus, address: "00:aa:01:01:00:01", adapter: "hci0")
            #expect(connector.deviceDescription == "00:AA:01:01:00:01 via hci0")
            let transport = try await connector.connectTransport()
            #expect(transport.address == FakeBlueZ.address)
            #expect(transport.adapter == "hci0")
            #expect(transport.devicePath == FakeBlueZ.devicePath)
            #expect(transport.isConnected)
            #expect(
                transport.characteristics == [
                    FakeBlueZ.data: .writeWithoutResponse, FakeBlueZ.control: [.write, .notify],
                    FakeBlueZ.status: .read,
                ])
            #expect(transport.link.attMTU == 517)
            #expect(transport.link.maximumWriteWithoutResponse == 510)
            #expect(transport.link.maximumWriteWithResponse == 512)
            // The default send buffer, 4096, which Linux doubles.
            #expect(
                transport.link.summary
                    == "BlueZ hci0, write without response via AcquireWrite (at most 8192 bytes queued in the socket), "
                    + "no delivery receipts (the device has no Client Characteristic Configuration descriptor): "
                    + "progress counts what bluetoothd queued, not what the device received")
            #expect(transport.statistics.socketQueueLimit == 8192)
            #expect(transport.writePaths == [FakeBlueZ.data: .acquiredSocket(mtu: 517)])
            #expect(fake.calls == ["Device1.Connect", "GattCharacteristic1.AcquireWrite"])

            await transport.disconnect()
            #expect(!transport.isConnected)
            #expect(fake.calls.last == "Device1.Disconnect")
            await transport.disconnect()
            #expect(fake.calls.filter { $0 == "Device1.Disconnect" }.count == 1)
        }
    }

    @Test func scansForADeviceTheAdapterDoesNotKnowYet() async throws {
        var script = FakeBlueZ.Script()
        script.deviceKnown = false
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            #expect(transport.isConnected)
            #expect(
                fake.calls == [
                    "Adapter1.SetDiscoveryFilter", "Adapter1.StartDiscovery", "Adapter1.StopDiscovery",
                    "Device1.Connect",
                    "GattCharacteristic1.AcquireWrite",
                ])
            #expect(fake.discoveryFilter == ["Transport": .string("le"), "Pattern": .string(FakeBlueZ.address)])
            await transport.disconnect()
        }
    }

    @Test func connectsAnUnseenDeviceWithConnectDeviceWhenTheAddressTypeIsKnown() async throws {
        var script = FakeBlueZ.Script()
        script.deviceKnown = false
        script.offersConnectDevice = true
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.addressType = .public }.connectTransport()
            #expect(transport.isConnected)
            #expect(fake.calls == ["Adapter1.ConnectDevice", "Device1.Connect", "GattCharacteristic1.AcquireWrite"])
            await transport.disconnect()
        }
    }

    @Test func scansWhenConnectDeviceIsNotOffered() async throws {
        var script = FakeBlueZ.Script()
        script.deviceKnown = false
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus) { $0.addressType = .public }.connectTransport()
            #expect(transport.isConnected)
            #expect(
                fake.calls.prefix(4) == [
                    "Adapter1.ConnectDevice", "Adapter1.SetDiscoveryFilter", "Adapter1.StartDiscovery",
                    "Adapter1.StopDiscovery",
                ])
            await transport.disconnect()
        }
    }

    @Test func saysWhenNoDeviceHasTheAddress() async throws {
        try await FakeBlueZ.with { bus, fake in
            let connector = FakeBlueZ.connector(on: bus, address: "11:22:33:44:55:66") {
                $0.discoveryTimeout = .milliseconds(300)
            }
            let error = await #expect(throws: TransportError.self) { _ = try await connector.connect() }
            #expect(error?.kind == .connectionFailed)
            #expect(
                error?.message
                    == "no device 11:22:33:44:55:66 was found by hci0 in 300 ms of scanning: is it powered, advertising and in range? ('bluetoothctl scan le' lists what is heard)"
            )
            #expect(fake.calls.last == "Adapter1.StopDiscovery")
        }
    }

    @Test func refusesAnInvalidAddressBeforeTouchingTheBus() async {
        let connector = BlueZConnector(address: "lamp", bus: .address("unix:path=/nonexistent"))
        await #expect(
            throws: TransportError(
                .connectionFailed, "'LAMP' is not a Bluetooth address: write six hex bytes such as 00:AA:01:01:00:01")
        ) {
            _ = try await connector.connect()
        }
    }

    @Test func saysWhenBluetoothdIsNotRunning() async throws {
        try await PrivateBus.with { bus in
            let error = await #expect(throws: TransportError.self) {
                _ = try await FakeBlueZ.connector(on: bus).connect()
            }
            #expect(error?.kind == .connectionFailed)
            #expect(error?.message.hasPrefix("bluetoothd is not running (org.bluez is not on the D-Bus bus at") == true)
            #expect(error?.message.hasSuffix("start it with 'systemctl start bluetooth'") == true)
        }
    }

    @Test func saysWhenTheAdapterIsMissingOffOrUnknown() async throws {
        var none = FakeBlueZ.Script()
        none.adapters = []
        none.deviceKnown = false
        try await FakeBlueZ.with(none) { bus, _ in
            let error = await #expect(throws: TransportError.self) {
                _ = try await FakeBlueZ.connector(on: bus).connect()
            }
            #expect(error?.message.hasPrefix("no Bluetooth adapter:") == true)
        }
        var off = FakeBlueZ.Script()
        off.adapters = [("hci0", "00:AA:01:00:00:00", false)]
        try await FakeBlueZ.with(off) { bus, fake in
            await #expect(throws: TransportError(.connectionFailed, "hci0 is powered off: run 'bluetoothctl power on'")) {
                _ = try await FakeBlueZ.connector(on: bus).connect()
            }
            #expect(fake.calls.isEmpty)
        }
        try await FakeBlueZ.with { bus, _ in
            await #expect(
                throws: TransportError(
                    .connectionFailed,
                    "no Bluetooth adapter named 'hci3' (adapters: hci0); list them with 'bluetoothctl list'")
            ) {
                _ = try await FakeBlueZ.connector(on: bus, adapter: "hci3").connect()
            }
        }
    }

    @Test func translatesAConnectFailure() async throws {
        var script = FakeBlueZ.Script()
        script.connectError = ("org.bluez.Error.Failed", "le-connection-abort-by-local")
        try await FakeBlueZ.with(script) { bus, fake in
            await #expect(
                throws: TransportError(
                    .connectionFailed,
                    "connecting to 00:AA:01:01:00:01 failed: le-connection-abort-by-local: is the device powered, advertising and in range?"
                )
            ) {
                _ = try await FakeBlueZ.connector(on: bus).connect()
            }
            // A failed attempt is cancelled in bluetoothd.
            #expect(await eventually { fake.calls.last == "Device1.Disconnect" })
        }
    }

    @Test func honoursCancellation() async throws {
        var script = FakeBlueZ.Script()
        script.deviceKnown = false
        try await FakeBlueZ.with(script) { bus, fake in
            // The device never appears on hci1's discovery: only cancellation ends the wait.
            let connector = FakeBlueZ.connector(on: bus, address: "11:22:33:44:55:66") {
                $0.discoveryTimeout = .seconds(60)
            }
            let attempt = Task { try await connector.connect() }
            #expect(await eventually { fake.calls.contains("Adapter1.StartDiscovery") })
            attempt.cancel()
            let result = await attempt.result
            #expect(throws: TransportError.self) { try result.get() }
            #expect(await eventually { fake.calls.last == "Adapter1.StopDiscovery" })
        }
    }
}
#endif
