import Foundation
import OTACore
import Testing

private struct InertProtocol: UpdateProtocol {
    var requirements: [CharacteristicRequirement] { [] }
    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome { .accepted }
}

private final class InertDevice: DeviceModel {
    var services: [GATTServiceDefinition] { [] }
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus { .success }
}

/// A configuration written the way the shipped protocols write theirs: each parameter declared
/// once, the stored properties' defaults taken from the declarations.
private struct WidgetConfiguration {
    static let count = ProtocolParameter.integer("count", summary: "widgets per batch", default: 16, in: 1...1024)
    static let wait = ProtocolParameter.duration("wait-ms", summary: "pause between batches", default: .milliseconds(250), milliseconds: 0...5000)
    static let service = ProtocolParameter.uuid("service-uuid", summary: "widget service", default: GATTUUID("180F")!)
    static let label = ProtocolParameter.text("label", summary: "a label", default: "none")
    static let version = ProtocolParameter<UInt32>.integer("version", summary: "image version", default: 0, in: 0...UInt32.max)
    static let parameters = [count.spec, wait.spec, service.spec, label.spec, version.spec]

    var count = Self.count.defaultValue
    var wait = Self.wait.defaultValue
    var service = Self.service.defaultValue
    var label = Self.label.defaultValue
    var version = Self.version.defaultValue

    init() {}

    init(parameters: ProtocolParameters) throws(OTAError) {
        let reader = try parameters.reader(declared: Self.parameters, protocolName: "widget")
        count = try reader.value(Self.count)
        wait = try reader.value(Self.wait)
        service = try reader.value(Self.service)
        label = try reader.value(Self.label)
        version = try reader.value(Self.version)
    }
}

@Suite struct ProtocolParameterSpecTests {
    @Test func aDeclarationGivesTheDefaultsAndParsesValues() throws {
        let defaults = WidgetConfiguration()
        #expect(defaults.count == 16 && defaults.wait == .milliseconds(250) && defaults.label == "none" && defaults.version == 0)
        #expect(try WidgetConfiguration(parameters: [:]).count == 16)

        let read = try WidgetConfiguration(parameters: [
            "count": "1024", "wait-ms": "0", "service-uuid": "4f544100-8a2e-4c1b-9f3d-2b7e5c6a0001", "label": "x=y", "version": "4294967295",
        ])
        #expect(read.count == 1024)
        #expect(read.wait == .zero)
        #expect(read.service == GATTUUID("4f544100-8a2e-4c1b-9f3d-2b7e5c6a0001"))
        #expect(read.label == "x=y")
        #expect(read.version == UInt32.max)
    }

    @Test(arguments: [
        (["count": "0"], "parameter 'count': '0' is out of range, expected 1...1024"),
        (["count": "1025"], "parameter 'count': '1025' is out of range, expected 1...1024"),
        (["count": "sixteen"], "parameter 'count': 'sixteen' is not an integer, expected 1...1024"),
        (["wait-ms": "5001"], "parameter 'wait-ms': '5001' is out of range, expected 0...5000"),
        (["wait-ms": "-1"], "parameter 'wait-ms': '-1' is out of range, expected 0...5000"),
        (["service-uuid": "nope"], "parameter 'service-uuid': 'nope' is not a Bluetooth UUID"),
        (["version": "4294967296"], "parameter 'version': '4294967296' is out of range, expected 0...4294967295"),
        (["cuont": "3"], "protocol 'widget' has no parameter 'cuont' (known: count, label, service-uuid, version, wait-ms)"),
    ])
    func aDeclarationRejectsOutOfRangeAndUnknownNames(values: [String: String], message: String) throws {
        let error = try #require(throws: OTAError.self) { try WidgetConfiguration(parameters: ProtocolParameters(values)) }
        #expect(error.code == .invalidParameter)
        #expect(error.message == message)
    }

    @Test func aDeclarationDescribesItself() {
        #expect(
            WidgetConfiguration.count.spec == ProtocolParameterSpec(name: "count", summary: "widgets per batch", kind: .integer(1...1024), defaultText: "16"))
        #expect(WidgetConfiguration.count.spec.helpText == "widgets per batch, 1...1024 (default 16)")
        #expect(WidgetConfiguration.wait.spec.kind == .duration(milliseconds: 0...5000))
        #expect(WidgetConfiguration.wait.spec.helpText == "pause between batches, 0...5000 ms (default 250)")
        #expect(WidgetConfiguration.service.spec.helpText == "widget service (default 0000180f-0000-1000-8000-00805f9b34fb)")
        #expect(WidgetConfiguration.label.spec.valueDescription == "text")
    }

    @Test func theDescriptorChecksParametersBeforeMakingAClientOrADevice() throws {
        let descriptor = ProtocolDescriptor(
            name: "widget", summary: "widgets", parameters: WidgetConfiguration.parameters,
            makeClient: { (_) throws(OTAError) in InertProtocol() },
            makeDeviceModel: { (_) throws(OTAError) in InertDevice() }
        )
        #expect(descriptor.parameters.map(\.name) == ["count", "wait-ms", "service-uuid", "label", "version"])
        let client = try #require(throws: OTAError.self) { try descriptor.makeClient(["count": "0"]) }
        #expect(client.message == "parameter 'count': '0' is out of range, expected 1...1024")
        let device = try #require(throws: OTAError.self) { try descriptor.makeDeviceModel(["typo": "1"]) }
        #expect(device.message.hasPrefix("protocol 'widget' has no parameter 'typo'"))
        #expect(throws: OTAError.self) { try descriptor.validate(["label": "a", "count": "2000"]) }
        try descriptor.validate(["label": "a", "count": "2"])
    }

    @Test func theCatalogOfDefaultsHoldsEachDeclaredFamilyInRegistrationOrder() throws {
        func descriptor(_ name: String, family: ProtocolDescriptor.DefaultFamily?) -> ProtocolDescriptor {
            ProtocolDescriptor(
                name: name, summary: name, parameters: WidgetConfiguration.parameters,
                makeClient: { (_) throws(OTAError) in InertProtocol() },
                makeDeviceModel: { (_) throws(OTAError) in InertDevice() },
                defaultFamily: family
            )
        }
        var resume = UpdateConfiguration()
        resume.resume.maximumAttempts = 7
        let registry = ProtocolRegistry([
            descriptor(
                "zeta",
                family: .init(name: "zeta-ota", summary: "Z", match: .init(services: [GATTUUID("180F")!]), parameters: ["count": "4"], configuration: resume)),
            descriptor("none", family: nil),
            descriptor("alpha", family: .init(name: "alpha-ota", match: .init(namePattern: GlobPattern("A-*")))),
        ])
        let catalog = try DeviceCatalog(defaultsOf: registry, source: "defaults")
        #expect(catalog.families.map(\.name) == ["zeta-ota", "alpha-ota"])
        let zeta = catalog.families[0]
        #expect(zeta.protocolName == "zeta" && zeta.source == "defaults" && zeta.summary == "Z")
        #expect(zeta.parameters["count"] == "4")
        #expect(zeta.configuration?.resume.maximumAttempts == 7)
        let heard = Advertisement(name: "A-1", serviceUUIDs: [], manufacturerData: [:], rssi: nil)
        #expect(try catalog.family(for: heard, device: "d")?.protocolName == "alpha")

        let broken = ProtocolRegistry([
            descriptor("bad", family: .init(name: "bad-ota", match: .init(namePattern: GlobPattern("B*")), parameters: ["count": "0"]))
        ])
        let error = try #require(throws: OTAError.self) { try DeviceCatalog(defaultsOf: broken, source: "defaults") }
        #expect(error.code == .invalidManifest)
        #expect(error.message == "defaults: family 'bad-ota' of protocol 'bad': parameter 'count': '0' is out of range, expected 1...1024")
    }
}
