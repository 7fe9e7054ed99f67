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
        let dataUUID = ProtocolParameter.uuid("data-uuid", summary: "data", default: GATTUUID("180F")!)
        let parameters: ProtocolParameters = ["data-uuid": "not-a-uuid", "typo": "1"]
        let unknown = try #require(throws: OTAError.self) {
            try parameters.reader(declared: [dataUUID.spec], protocolName: "generic")
        }
        #expect(unknown.message == "protocol 'generic' has no parameter 'typo' (known: data-uuid)")
        let bad = try #require(throws: OTAError.self) {
            try (["data-uuid": "not-a-uuid"] as ProtocolParameters).reader(declared: [dataUUID.spec], protocolName: "generic")
        }
        #expect(bad.code == .invalidParameter)
        #expect(bad.message == "parameter 'data-uuid': 'not-a-uuid' is not a Bluetooth UUID")
        let batch = ProtocolParameter.integer("batch", summary: "batch", default: 8, in: 1...64)
        let other = ProtocolParameter.integer("other", summary: "other", default: 8, in: 1...64)
        let count: ProtocolParameters = ["batch": "0"]
        #expect(throws: OTAError.self) { try count.reader(declared: [batch.spec, other.spec], protocolName: "test") }
        #expect(try ([:] as ProtocolParameters).reader(declared: [batch.spec, other.spec], protocolName: "test").value(other) == 8)
    }

    @Test func registrationOrderIsKept() {
        let registry = ProtocolRegistry([Self.descriptor("b"), Self.descriptor("a"), Self.descriptor("c")])
        #expect(registry.inRegistrationOrder.map(\.name) == ["b", "a", "c"])
        #expect(registry.all.map(\.name) == ["a", "b", "c"])
    }
}
