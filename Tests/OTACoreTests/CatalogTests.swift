import Foundation
import OTACore
import Testing

private let batch = ProtocolParameter.integer("batch", summary: "", default: 1, in: 1...64)

/// A registry with two stand-in protocols that accept only the parameter "batch" (1...64).
private func registry() -> ProtocolRegistry {
    ProtocolRegistry(
        ["alpha", "beta"].map { name in
            ProtocolDescriptor(
                name: name, summary: name, parameters: [batch.spec],
                makeClient: { (parameters) throws(OTAError) in
                    _ = try parameters.reader(declared: [batch.spec], protocolName: name).value(batch)
                    return StubProtocol()
                },
                makeDeviceModel: { (_) throws(OTAError) in StubDevice() }
            )
        })
}

private struct StubProtocol: UpdateProtocol {
    var requirements: [CharacteristicRequirement] { [] }
    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome { .accepted }
}

private final class StubDevice: DeviceModel {
    var services: [GATTServiceDefinition] { [] }
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus { .success }
}

private func parse(_ json: String, source: String = "test.json") throws(OTAError) -> DeviceCatalog {
    try DeviceCatalog.parse(Data(json.utf8), source: source, registry: registry())
}

@Suite struct CatalogTests {
    static let good = """
        {"catalog": 1, "families": [
          {"name": "sensor", "match": {"name": "ACME-*", "services": ["180F"]}, "protocol": "alpha",
           "parameters": {"batch": 8}, "hardware": "rev-b", "mtu": 247, "maxChunk": 120,
           "timeouts": {"response": 2.5, "verify": 60}, "resume": {"attempts": 2, "initialDelay": 0.25}},
          {"name": "lock", "match": {"manufacturer": {"company": "0x02E5", "prefix": "424C"}}, "protocol": "beta"}
        ]}
        """

    @Test func parsesFamiliesWithEverySetting() throws {
        let catalog = try parse(Self.good)
        #expect(catalog.families.map(\.name) == ["sensor", "lock"])
        let sensor = catalog.families[0]
        #expect(sensor.protocolName == "alpha")
        #expect(sensor.parameters["batch"] == "8")
        #expect(sensor.hardware == "rev-b" && sensor.preferredMTU == 247)
        #expect(sensor.configuration?.responseTimeout == .milliseconds(2500))
        #expect(sensor.configuration?.verifyTimeout == .seconds(60))
        #expect(sensor.configuration?.resume.maximumAttempts == 2)
        #expect(sensor.configuration?.resume.initialDelay == .milliseconds(250))
        #expect(sensor.configuration?.maximumChunkSize == 120)
        #expect(sensor.source == "test.json")
    }

    @Test func matchesByNameServicesAndManufacturerData() throws {
        let catalog = try parse(Self.good)
        let sensor = Advertisement(name: "ACME-42", serviceUUIDs: [GATTUUID("180F")!])
        #expect(try catalog.family(for: sensor, device: "d")?.name == "sensor")
        // Every criterion must hold.
        #expect(try catalog.family(for: Advertisement(name: "ACME-42"), device: "d") == nil)
        #expect(try catalog.family(for: Advertisement(name: "Other", serviceUUIDs: [GATTUUID("180F")!]), device: "d") == nil)
        let lock = Advertisement(name: "x", manufacturerData: [0x02E5: Data([0x42, 0x4C, 0x07])])
        #expect(try catalog.family(for: lock, device: "d")?.name == "lock")
        #expect(try catalog.family(for: Advertisement(manufacturerData: [0x02E5: Data([0x42])]), device: "d") == nil)
    }

    @Test func twoMatchingFamiliesAreReportedNotGuessed() throws {
        let a = try parse(#"{"catalog": 1, "families": [{"name": "a", "match": {"name": "X*"}, "protocol": "alpha"}]}"#, source: "a.json")
        let b = try parse(#"{"catalog": 1, "families": [{"name": "b", "match": {"services": ["180F"]}, "protocol": "beta"}]}"#, source: "b.json")
        let merged = try a.merging(b)
        let error = try #require(throws: OTAError.self) {
            try merged.family(for: Advertisement(name: "X1", serviceUUIDs: [GATTUUID("180F")!]), device: "sim:x")
        }
        #expect(error.code == .selectionFailed)
        #expect(error.message == "sim:x matches 2 device families: 'a' (a.json) and 'b' (b.json); make their match rules exclusive")
    }

    @Test func aFamilyDefinedTwiceIsAConflict() throws {
        let one = #"{"catalog": 1, "families": [{"name": "a", "match": {"name": "X*"}, "protocol": "alpha"}]}"#
        let error = try #require(throws: OTAError.self) { try parse(one, source: "one.json").merging(try parse(one, source: "two.json")) }
        #expect(error.message == "family 'a' is defined in both one.json and two.json; rename one or drop a catalog")
    }

    /// Bad catalogs: one line naming the file and the field.
    @Test(arguments: [
        ("{", "test.json: malformed JSON"),
        ("[]", "test.json: expected a JSON object at the top level"),
        (#"{"catalog": 2, "families": []}"#, "test.json: catalog: unsupported version"),
        (#"{"catalog": 1}"#, "test.json: families: missing"),
        (#"{"catalog": 1, "families": [], "extra": 1}"#, "test.json: extra: unknown field"),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"name": "x"}, "protocol": "gamma"}]}"#,
            "test.json: families[0].protocol: unknown protocol 'gamma' (available: alpha, beta)"
        ),
        (#"{"catalog": 1, "families": [{"name": "a", "match": {"name": "x"}, "protocol": 7}]}"#, "test.json: families[0].protocol: expected a string"),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {}, "protocol": "alpha"}]}"#,
            "test.json: families[0].match: needs at least one of name, services, manufacturer"
        ),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"services": ["nope"]}, "protocol": "alpha"}]}"#,
            "test.json: families[0].match.services[0]: 'nope' is not a Bluetooth UUID"
        ),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"name": "x"}, "protocol": "alpha", "parameters": {"batch": 99}}]}"#,
            "test.json: families[0].parameters: parameter 'batch': '99' is out of range, expected 1...64"
        ),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"name": "x"}, "protocol": "alpha", "parameters": {"window": 2}}]}"#,
            "test.json: families[0].parameters: protocol 'alpha' has no parameter 'window'"
        ),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"name": "x"}, "protocol": "alpha", "mtu": 9000}]}"#,
            "test.json: families[0].mtu: expected an integer in 23...517"
        ),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"name": "x"}, "protocol": "alpha", "maxChunk": 0}]}"#,
            "test.json: families[0].maxChunk: expected an integer in 1...512"
        ),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"name": "x"}, "protocol": "alpha", "timeouts": {"verify": -1}}]}"#,
            "test.json: families[0].timeouts.verify: expected a positive number of seconds"
        ),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"manufacturer": {"company": "xyz"}}, "protocol": "alpha"}]}"#,
            "test.json: families[0].match.manufacturer.company: expected a 16-bit company identifier"
        ),
        (
            #"{"catalog": 1, "families": [{"name": "a", "match": {"name": "x"}, "protocol": "alpha"}, {"name": "a", "match": {"name": "y"}, "protocol": "beta"}]}"#,
            "test.json: families[1].name: family 'a' is already defined in test.json"
        ),
    ])
    func badCatalogsGetOneLineNamingFileAndField(json: String, expected: String) throws {
        let error = try #require(throws: OTAError.self) { try parse(json) }
        #expect(error.code == .invalidManifest)
        #expect(error.message.hasPrefix(expected), "got: \(error.message)")
        #expect(!error.message.contains("\n"))
    }

    @Test(arguments: [
        ("ACME-*", "ACME-1", true), ("ACME-*", "ACME-", true), ("ACME-*", "acme-1", false), ("?olt*", "BoltLock", true),
        ("*Lock", "BoltLock", true), ("*Lock", "BoltLocks", false), ("a*b*c", "axxbyyc", true), ("a*b*c", "axxbyy", false), ("", "", true),
    ])
    func globPatterns(pattern: String, text: String, matches: Bool) {
        #expect(GlobPattern(pattern).matches(text) == matches)
    }
}

/// A catalog family's `pairing`: parsed into a ``LinkPairing``, bad values refused with one line.
@Suite struct CatalogPairingTests {
    static func family(_ pairing: String) throws -> DeviceFamily? {
        try DeviceCatalog.parse(
            Data(#"{"catalog": 1, "families": [{"name": "lock", "match": {"name": "L*"}, "protocol": "alpha", "pairing": \#(pairing)}]}"#.utf8),
            source: "c.json", registry: registry()
        ).families.first
    }

    @Test func aPasskeyAndTheBondAreReadAsWritten() throws {
        let family = try #require(try Self.family(#"{"passkey": "012345"}"#))
        #expect(family.pairing == LinkPairing(passkey: 12345, removesBondAfterwards: true, source: "catalog family 'lock'"))
        let kept = try #require(try Self.family(#"{"keepBond": true}"#))
        #expect(kept.pairing == LinkPairing(passkey: nil, removesBondAfterwards: false, source: "catalog family 'lock'"))
        #expect(try Self.family("{}")?.pairing?.passkey == nil)
    }

    @Test(arguments: [
        (#"{"passkey": "12345"}"#, "families[0].pairing.passkey: '12345' is not a passkey of six digits"),
        (#"{"passkey": "1234567"}"#, "is not a passkey of six digits"),
        (#"{"passkey": "12 456"}"#, "is not a passkey of six digits"),
        (#"{"passkey": 123456}"#, "families[0].pairing.passkey: expected a string"),
        (#"{"keepBond": 1}"#, "families[0].pairing.keepBond: expected true or false"),
        (#"{"pin": "1234"}"#, "families[0].pairing.pin: unknown field"),
        (#""first""#, "families[0].pairing: expected an object"),
    ])
    func badPairingIsRefusedWithOneLine(pairing: String, message: String) throws {
        let error = try #require(throws: OTAError.self) { try Self.family(pairing) }
        #expect(error.code == .invalidManifest)
        #expect(error.message.contains(message), "\(error.message)")
        #expect(!error.message.contains("\n"))
    }

    @Test func passkeysAreSixASCIIDigits() {
        #expect(LinkPairing.passkey("000000") == 0)
        #expect(LinkPairing.passkey("999999") == 999_999)
        for text in ["", "12345", "1234567", "-12345", "+12345", "12345a", "１２３４５６", "12 345"] {
            #expect(LinkPairing.passkey(text) == nil, "\(text)")
        }
    }
}
