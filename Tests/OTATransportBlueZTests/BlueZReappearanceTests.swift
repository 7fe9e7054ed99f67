#if os(Linux)
import Foundation
import OTACore
import Testing

@testable import OTATransportBlueZ

/// After a jump, BlueZ discovery takes only the device the rule accepts: by address (the same or
/// the next) and by the advertised name, through a scripted org.bluez.
@Suite(.needsLibDBus) struct BlueZReappearanceTests {
    /// The fake's device (00:AA:01:01:00:01, "ota-lamp") plays the bootloader of an application
    /// at 00:AA:01:01:00:00.
    static let application = "00:AA:01:01:00:00"

    @Test func theDeviceAtTheNextAddressWithTheNameIsFound() async throws {
        try await FakeBlueZ.with { bus, _ in
            let connector = FakeBlueZ.connector(on: bus, address: Self.application)
            #expect(connector.airAddress == Self.application)
            let rule = ReappearanceRule(addresses: [Self.application, FakeBlueZ.address], name: "ota-lamp")
            let found = try await connector.reappeared(matching: rule, within: .seconds(5))
            let bootloader = try #require(found as? BlueZConnector)
            #expect(bootloader.address == FakeBlueZ.address)
            #expect(bootloader.adapter == connector.adapter)
        }
    }

    @Test func anotherNameAtTheRightAddressIsRefusedNamingWhatWasHeard() async throws {
        try await FakeBlueZ.with { bus, _ in
            let connector = FakeBlueZ.connector(on: bus, address: Self.application)
            let rule = ReappearanceRule(addresses: [Self.application, FakeBlueZ.address], name: "DfuA3F09")
            let error = await #expect(throws: OTAError.self) {
                _ = try await connector.reappeared(matching: rule, within: .milliseconds(500))
            }
            #expect(error?.code == .connectionFailed)
            #expect(error?.message.contains("did not come back at 00:AA:01:01:00:00 or 00:AA:01:01:00:01, advertising as DfuA3F09") == true)
            #expect(error?.message.contains("heard only 00:AA:01:01:00:01 'ota-lamp'") == true)
        }
    }

    @Test func theRightNameAtAnotherDevicesAddressIsRefused() async throws {
        try await FakeBlueZ.with { bus, _ in
            let connector = FakeBlueZ.connector(on: bus, address: "00:AA:01:01:00:10")
            let rule = ReappearanceRule(addresses: ["00:AA:01:01:00:10", "00:AA:01:01:00:11"], name: "ota-lamp")
            await #expect(throws: OTAError.self) {
                _ = try await connector.reappeared(matching: rule, within: .milliseconds(500))
            }
        }
    }

    @Test func theLatestReportOfAnAddressCounts() {
        let rule = ReappearanceRule(addresses: [Self.application, FakeBlueZ.address], name: "DfuA3F09")
        let before = DiscoveredDevice(address: Self.application, advertisement: Advertisement(name: "Tracker"))
        let after = DiscoveredDevice(address: Self.application, advertisement: Advertisement(name: "DfuA3F09"))
        #expect(BlueZConnector.choose(rule, among: [before]) == .none)
        #expect(BlueZConnector.choose(rule, among: [before, after]) == .found(after))
        // A name-less rule would otherwise take the application's stale report and the
        // bootloader's new one for two devices.
        let addressOnly = ReappearanceRule(addresses: [Self.application], name: nil)
        #expect(BlueZConnector.choose(addressOnly, among: [before, after]) == .found(after))
    }
}
#endif
