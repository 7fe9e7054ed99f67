#if os(Linux)
import OTACore
import Testing

@testable import OTATransportBlueZ

/// What the pairing agent answers bluetoothd, without a bus: only its own adapter's devices,
/// the passkey given (or none), Just Works accepted.
@Suite struct BlueZPairingAgentTests {
    static let own: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
    static let other: DBusObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"

    static func agent(passkey: UInt32?) -> BlueZPairingAgent {
        BlueZPairingAgent(path: "/org/swiftbleota/agent", adapterPath: "/org/bluez/hci0", passkey: passkey)
    }

    @Test func registersWithTheCapabilityThePasskeyAllows() {
        #expect(Self.agent(passkey: nil).capability == "NoInputNoOutput")
        #expect(Self.agent(passkey: 123_456).capability == "KeyboardOnly")
    }

    @Test func entersThePasskeyGivenAndRefusesWithoutOne() {
        #expect(Self.agent(passkey: 42).answer(.passkey(device: Self.own)) == .passkey(42))
        #expect(Self.agent(passkey: 42).answer(.pinCode(device: Self.own)) == .pinCode("000042"))
        guard case .reject(let reason) = Self.agent(passkey: nil).answer(.passkey(device: Self.own)) else {
            Issue.record("a passkey request without a passkey was not refused")
            return
        }
        #expect(reason.contains("--passkey"))
    }

    @Test func acceptsJustWorksAndOnlyTheMatchingComparison() {
        let justWorks = Self.agent(passkey: nil)
        #expect(justWorks.answer(.authorization(device: Self.own)) == .accept)
        #expect(justWorks.answer(.confirmation(device: Self.own, passkey: 777_777)) == .accept)
        let withPasskey = Self.agent(passkey: 123_456)
        #expect(withPasskey.answer(.confirmation(device: Self.own, passkey: 123_456)) == .accept)
        #expect(
            withPasskey.answer(.confirmation(device: Self.own, passkey: 654_321))
                == .reject("the devices show 654321, not the passkey given (123456)"))
    }

    @Test func refusesDevicesOfAnotherAdapter() {
        for request: BlueZPairingAgent.Request in [
            .passkey(device: Self.other), .authorization(device: Self.other),
            .confirmation(device: Self.other, passkey: 1), .service(device: Self.other, uuid: "1800"),
        ] {
            guard case .reject(let reason) = Self.agent(passkey: 1).answer(request) else {
                Issue.record("\(request) for another adapter's device was accepted")
                continue
            }
            #expect(reason.contains("/org/bluez/hci0"))
        }
    }

    @Test func parsesBluetoothdsCalls() {
        #expect(BlueZPairingAgent.request(member: "RequestPasskey", arguments: [.objectPath(Self.own)]) == .passkey(device: Self.own))
        #expect(
            BlueZPairingAgent.request(member: "RequestConfirmation", arguments: [.objectPath(Self.own), .uint32(5)])
                == .confirmation(device: Self.own, passkey: 5))
        #expect(
            BlueZPairingAgent.request(member: "DisplayPasskey", arguments: [.objectPath(Self.own), .uint32(5), .uint16(0)])
                == .display(device: Self.own, passkey: "000005"))
        #expect(BlueZPairingAgent.request(member: "Cancel", arguments: []) == .cancel)
        // Malformed or unknown: nil, answered as an unknown method.
        #expect(BlueZPairingAgent.request(member: "RequestConfirmation", arguments: [.objectPath(Self.own)]) == nil)
        #expect(BlueZPairingAgent.request(member: "RequestPasskey", arguments: [.string("x")]) == nil)
        #expect(BlueZPairingAgent.request(member: "Steal", arguments: []) == nil)
    }

    @Test func peripheralFlagsAskForAnEncryptedLink() {
        #expect(GATTApplication.flags(for: [.writeWithoutResponse, .notify]) == ["write-without-response", "notify"])
        #expect(
            GATTApplication.flags(for: [.writeWithoutResponse], security: .encrypted)
                == ["write-without-response", "encrypt-write"])
        #expect(
            GATTApplication.flags(for: [.read, .write, .notify], security: .authenticated)
                == ["encrypt-authenticated-read", "encrypt-authenticated-write", "notify"])
    }
}
#endif
