import Foundation
import OTACore
import Testing

/// A minimal protocol for registry tests.
private struct NullProtocol: UpdateProtocol {
    var requirements: [CharacteristicRequirement] { [] }
    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome { .accepted }
}

private final class NullDevice: DeviceModel {
    var services: [GATTServiceDefinition] { [] }
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus { .success }
}

@Suite struct ProtocolRegistryTests {
    private static func descriptor(_ name: String) -> ProtocolDescriptor {
        ProtocolDescriptor(
            name: name,
            summary: "test",
            parameters: [],
            makeClient: { (_) throws(OTAError) in NullProtocol() },
            makeDeviceModel: { (_) throws(OTAError) in NullDevice() }
        )
    }

    @Test func resolvesRegisteredNames() throws {
        let registry = ProtocolRegistry([Self.descriptor("b"), Self.descriptor("a")])
        #expect(registry.all.map(\.name) == ["a", "b"])
        #expect(try registry.descriptor(named: "b").name == "b")
    }

    @Test func unknownNameListsTheKnownOnes() throws {
        let registry = ProtocolRegistry([Self.descriptor("generic")])
        let error = try #require(throws: OTAError.self) { try registry.descriptor(named: "framed") }
        #expect(error.code == .unknownProtocol)
        #expect(error.message == "unknown protocol 'framed' (available: generic)")
    }

    @Test func parametersRejectUnknownNamesAndBadValues() throws {
        let parameters: ProtocolParameters = ["data-uuid": "not-a-uuid", "typo": "1"]
        let unknown = try #require(throws: OTAError.self) {
            try parameters.validate(known: ["data-uuid"], protocolName: "generic")
        }
        #expect(unknown.message == "protocol 'generic' has no parameter 'typo' (known: data-uuid)")
        let bad = try #require(throws: OTAError.self) {
            try parameters.uuid("data-uuid", default: GATTUUID("180F")!)
        }
        #expect(bad.code == .invalidParameter)
        #expect(bad.message == "parameter 'data-uuid': 'not-a-uuid' is not a Bluetooth UUID")
        let count: ProtocolParameters = ["batch": "0"]
        #expect(throws: OTAError.self) { try count.integer("batch", default: 8, in: 1...64) }
        #expect(try count.integer("other", default: 8, in: 1...64) == 8)
    }
}
