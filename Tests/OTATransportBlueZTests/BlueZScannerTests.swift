#if os(Linux)
import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// Discovery through a scripted org.bluez.
@Suite(.needsLibDBus) struct BlueZScannerTests {
    @Test func yieldsAdvertisementsFromInterfacesAdded() async throws {
        var script = FakeBlueZ.Script()
        script.deviceKnown = false
        try await FakeBlueZ.with(script) { bus, fake in
            let scanner = BlueZScanner(
                adapter: "hci0", filter: .init(serviceUUIDs: [FakeBlueZ.serviceUUID]), bus: .address(bus.address))
            var discoveries: AsyncThrowingStream<BlueZScanner.Discovery, any Error>? = try await scanner.discoveries()
            #expect(
                fake.discoveryFilter == [
                    "Transport": .string("le"), "UUIDs": .strings([FakeBlueZ.serviceUUID.description]),
                ])
            var iterator = discoveries?.makeAsyncIterator()
            let discovery = try #require(try await iterator?.next())
            #expect(discovery.address == FakeBlueZ.address)
            #expect(discovery.addressType == "public")
            #expect(discovery.adapter == "hci0")
            #expect(discovery.path == FakeBlueZ.devicePath)
            #expect(!discovery.isConnected)
            #expect(
                discovery.advertisement
                    == Advertisement(
                        name: "ota-lamp", serviceUUIDs: [FakeBlueZ.serviceUUID],
                        manufacturerData: [0x0059: Data([1, 2, 3])], rssi: -52))

            // A new advertisement of the same device (RSSI) is reported too; a connection change is not.
            try await fake.server.setProperties(
                ["Connected": .bool(true)], of: BlueZ.Interface.device, at: FakeBlueZ.devicePath)
            try await fake.server.setProperties(
                ["RSSI": .int16(-40)], of: BlueZ.Interface.device, at: FakeBlueZ.devicePath)
            let update = try #require(try await iterator?.next())
            #expect(update.advertisement.rssi == -40)
            #expect(update.isConnected)

            // Dropping the stream stops discovery.
            iterator = nil
            discoveries = nil
            #expect(await eventually { fake.calls.last == "Adapter1.StopDiscovery" })
        }
    }

    @Test func reportsDevicesAlreadyHeard() async throws {
        try await FakeBlueZ.with { bus, fake in
            let scanner = BlueZScanner(filter: .init(pattern: "ota-"), bus: .address(bus.address))
            var iterator = try await scanner.discoveries().makeAsyncIterator()
            let discovery = try await iterator.next()
            #expect(discovery?.advertisement.name == "ota-lamp")
            #expect(discovery?.advertisement.rssi == -52)
            #expect(fake.discoveryFilter == ["Transport": .string("le"), "Pattern": .string("ota-")])
        }
    }

    @Test func failsToStartWithAOneLineError() async throws {
        var script = FakeBlueZ.Script()
        script.adapters = [("hci0", "00:AA:01:00:00:00", false)]
        try await FakeBlueZ.with(script) { bus, _ in
            await #expect(throws: TransportError(.connectionFailed, "hci0 is powered off: run 'bluetoothctl power on'")) {
                _ = try await BlueZScanner(bus: .address(bus.address)).discoveries()
            }
        }
    }

    @Test func filterMatchesLikeBlueZ() throws {
        let device = try #require(
            BlueZObjectTree.Device(path: FakeBlueZ.devicePath, properties: FakeBlueZ.deviceProperties))
        #expect(BlueZScanner.Filter().accepts(device))
        #expect(BlueZScanner.Filter(serviceUUIDs: [FakeBlueZ.serviceUUID, GATTUUID("180F")!]).accepts(device))
        #expect(!BlueZScanner.Filter(serviceUUIDs: [GATTUUID("180F")!]).accepts(device))
        #expect(BlueZScanner.Filter(pattern: "00:aa:01").accepts(device))
        #expect(BlueZScanner.Filter(pattern: "ota").accepts(device))
        #expect(!BlueZScanner.Filter(pattern: "lamp").accepts(device))
        #expect(
            BlueZScanner.Filter(reportsDuplicates: true).discoveryFilter == [
                "Transport": .string("le"), "DuplicateData": .bool(true),
            ])
    }
}
#endif
