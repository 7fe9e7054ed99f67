#if os(Linux)
import OTACore
import Synchronization
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

    @Test func withAPersonToAskItRegistersForPasskeyEntryAndAsks() {
        let asking = BlueZPairingAgent(path: "/org/swiftbleota/agent", adapterPath: "/org/bluez/hci0", passkey: nil, asksPerson: true)
        #expect(asking.capability == "KeyboardOnly")
        #expect(asking.answer(.passkey(device: Self.own)) == .askPerson(pin: false))
        #expect(asking.answer(.pinCode(device: Self.own)) == .askPerson(pin: true))
        // Just Works still pairs without asking; another adapter's device is still refused.
        #expect(asking.answer(.authorization(device: Self.own)) == .accept)
        #expect(asking.answer(.confirmation(device: Self.own, passkey: 1)) == .accept)
        guard case .reject = asking.answer(.passkey(device: Self.other)) else {
            Issue.record("asked for another adapter's device")
            return
        }
        // A passkey given wins over asking.
        let given = BlueZPairingAgent(path: "/org/swiftbleota/agent", adapterPath: "/org/bluez/hci0", passkey: 7, asksPerson: true)
        #expect(given.answer(.passkey(device: Self.own)) == .passkey(7))
    }

    @Test func thePersonsAnswerIsSixDigitsOrARefusalThatSaysWhy() async {
        let question = QuestionLog()
        let answer: @Sendable (String?) -> (@Sendable (String) async -> String?) = { reply in
            { text in
                question.record(text)
                return reply
            }
        }
        #expect(await BlueZPairingAgent.asked(answer("012345"), device: Self.own, pin: false) == .passkey(12345))
        #expect(await BlueZPairingAgent.asked(answer(" 987654 "), device: Self.own, pin: true) == .pinCode("987654"))
        #expect(await BlueZPairingAgent.asked(answer("12345"), device: Self.own, pin: false) == .reject("'12345' is not six digits"))
        #expect(await BlueZPairingAgent.asked(answer("１２３４５６"), device: Self.own, pin: false) == .reject("'１２３４５６' is not six digits"))
        #expect(await BlueZPairingAgent.asked(answer(nil), device: Self.own, pin: false) == .reject("no passkey was entered"))
        #expect(await BlueZPairingAgent.asked(nil, device: Self.own, pin: false) == .reject("no passkey was given (--passkey)"))
        #expect(question.all.first == "passkey shown by 00:AA:01:01:00:01 (six digits): ")
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
/// The questions an agent asked, in order.
final class QuestionLog: Sendable {
    private let questions = Mutex<[String]>([])
    func record(_ question: String) { questions.withLock { $0.append(question) } }
    var all: [String] { questions.withLock { $0 } }
}

/// A catalog family's pairing reaches the connector of the session, unless the command line chose.
@Suite struct CatalogPairingOnBlueZTests {
    static func device(_ options: [String: [String]]) throws -> BlueZDevice {
        let provider = BlueZTransportProvider()
        return try #require(try provider.device(at: "00:AA:01:01:00:01", options: TransportOptions(options)) as? BlueZDevice)
    }

    @Test func theFamilysPairingAppliesWhereTheCommandLineChoseNone() throws {
        let family = LinkPairing(passkey: 246_810, removesBondAfterwards: true, source: "catalog family 'lock'")
        let request = SessionRequest(protocolName: "generic", pairing: family)
        let pairing = try Self.device([:]).connector(for: request).configuration.pairing
        #expect(pairing.pairsFirst && pairing.passkey == 246_810 && pairing.removesBondAfterwards)
        // Nothing asked: nothing changes.
        #expect(try Self.device([:]).connector(for: SessionRequest(protocolName: "generic")).configuration.pairing == .init())
        // --pairing auto (or any --pairing, or --passkey) on the command line wins.
        #expect(try Self.device(["--pairing": ["auto"]]).connector(for: request).configuration.pairing == .init())
        let typed = try Self.device(["--passkey": ["111111"]]).connector(for: request).configuration.pairing
        #expect(typed.passkey == 111_111 && !typed.removesBondAfterwards)
    }
}
#endif
