import Foundation
import Testing

@testable import OTACore

/// The rule that finds a device again after it restarted elsewhere, without a transport.
@Suite struct ReappearanceRuleTests {
    let rule = ReappearanceRule(addresses: ["c0:ff:ee:00:00:10", "C0:FF:EE:00:00:11"], name: "DfuA3F09")

    func heard(_ address: String, _ name: String?) -> DiscoveredDevice {
        DiscoveredDevice(address: address, advertisement: Advertisement(name: name))
    }

    @Test func theDeviceIsTakenAtEitherAddressWithTheNameSet() {
        #expect(rule.accepts(heard("C0:FF:EE:00:00:10", "DfuA3F09")))
        #expect(rule.accepts(heard("c0:ff:ee:00:00:11", "DfuA3F09")))
    }

    @Test func anyOtherBootloaderInRangeIsNot() {
        // The neighbour's DfuTarg at the very address the bootloader takes.
        #expect(!rule.accepts(heard("C0:FF:EE:00:00:11", "DfuTarg")))
        // The right name at an address of another device.
        #expect(!rule.accepts(heard("C0:FF:EE:00:00:12", "DfuA3F09")))
        #expect(!rule.accepts(heard("C0:FF:EE:00:00:11", nil)))
    }

    @Test func aTransportWithoutAddressesGoesByTheNameAlone() {
        #expect(rule.accepts(address: nil, advertisedName: "DfuA3F09"))
        #expect(!rule.accepts(address: nil, advertisedName: "DfuTarg"))
        // An address rule without a name takes nothing it cannot place.
        let addressOnly = ReappearanceRule(addresses: ["C0:FF:EE:00:00:10"], name: nil)
        #expect(!addressOnly.accepts(address: nil, advertisedName: "DfuTarg"))
        #expect(addressOnly.accepts(address: "C0:FF:EE:00:00:10", advertisedName: "DfuTarg"))
    }

    @Test func oneMatchIsFoundAmongMany() {
        let devices = [
            heard("C0:FF:EE:00:00:21", "DfuTarg"), heard("C0:FF:EE:00:00:11", "DfuTarg"), heard("C0:FF:EE:00:00:11", "DfuA3F09"),
            heard("C0:FF:EE:00:00:10", "Tracker"),
        ]
        #expect(rule.select(from: devices) == .found(heard("C0:FF:EE:00:00:11", "DfuA3F09")))
        #expect(rule.select(from: Array(devices.prefix(2))) == .none)
    }

    @Test func twoMatchesAreRefusedRatherThanGuessed() {
        let addressOnly = ReappearanceRule(addresses: ["C0:FF:EE:00:00:10", "C0:FF:EE:00:00:11"], name: nil)
        let devices = [heard("C0:FF:EE:00:00:10", "DfuTarg"), heard("C0:FF:EE:00:00:11", "DfuTarg")]
        #expect(addressOnly.select(from: devices) == .ambiguous(devices))
        let error = addressOnly.failure(heard: devices, after: .seconds(10))
        #expect(error.code == .connectionFailed)
        #expect(error.message.hasPrefix("2 devices match at C0:FF:EE:00:00:10 or C0:FF:EE:00:00:11"))
        #expect(error.message.contains("refusing to guess"))
    }

    @Test func notFoundIsOneLineNamingTheRuleAndTheCandidates() {
        let devices = [heard("C0:FF:EE:00:00:21", "DfuTarg"), heard("C0:FF:EE:00:00:21", "DfuTarg"), heard("C0:FF:EE:00:00:30", nil)]
        let error = rule.failure(heard: devices, after: .seconds(10))
        #expect(
            error.message
                == "the device did not come back at C0:FF:EE:00:00:10 or C0:FF:EE:00:00:11, advertising as DfuA3F09 within 10.0 s (heard only C0:FF:EE:00:00:21 'DfuTarg', C0:FF:EE:00:00:30 'unnamed'); is it in range? Power-cycle it and run the command again"
        )
        #expect(rule.failure(heard: [], after: .seconds(10)).message.contains("(nothing was heard)"))
    }

    @Test func theDefaultConnectorGoesBackToItsOwnDeviceOnlyWhenTheRuleAllowsIt() async throws {
        struct Fixed: Connector {
            var airAddress: String? { "C0:FF:EE:00:00:10" }
            var deviceDescription: String { "fixed" }
            func connect() async throws(TransportError) -> any Transport { throw TransportError(.connectionFailed, "no") }
        }
        let same = try await Fixed().reappeared(matching: rule, within: .seconds(1))
        #expect(same.deviceDescription == "fixed")
        await #expect(throws: OTAError.self) {
            _ = try await Fixed().reappeared(matching: ReappearanceRule(addresses: ["C0:FF:EE:00:00:11"], name: nil), within: .seconds(1))
        }
    }
}
