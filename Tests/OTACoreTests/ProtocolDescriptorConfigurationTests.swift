import Foundation
import OTACore
import Testing

/// A configuration as the shipped protocols write theirs, read by the descriptor it belongs to.
private struct GadgetConfiguration: ProtocolConfiguration, Hashable {
    static let batch = ProtocolParameter.integer("batch", summary: "chunks per batch", default: 8, in: 1...64)
    static let label = ProtocolParameter.text("label", summary: "a label", default: "plain")
    static let parameters = [batch.spec, label.spec]
    static var protocolName: String { "gadget" }

    var batch = Self.batch.defaultValue
    var label = Self.label.defaultValue

    init(reading reader: ProtocolParameterReader) throws(OTAError) {
        batch = try reader.value(Self.batch)
        label = try reader.value(Self.label)
        guard label != "refused" else { throw OTAError(.invalidParameter, "parameter 'label': 'refused' is refused") }
    }
}

/// A client and a device model that keep the configuration they were made with.
private struct GadgetClient: UpdateProtocol {
    let configuration: GadgetConfiguration
    var requirements: [CharacteristicRequirement] { [] }
    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome { .accepted }
}

private final class GadgetDevice: DeviceModel {
    let configuration: GadgetConfiguration
    let key: TrustedKey?
    init(_ configuration: GadgetConfiguration, key: TrustedKey? = nil) {
        self.configuration = configuration
        self.key = key
    }
    var services: [GATTServiceDefinition] { [] }
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus { .success }
}

@Suite struct ProtocolDescriptorConfigurationTests {
    private static let key = TrustedKey(algorithm: .ed25519, publicKey: Data(repeating: 7, count: 32), source: "gadget.pem")

    private static func descriptor(verifying: Bool) -> ProtocolDescriptor {
        var makeVerifying: (@Sendable (GadgetConfiguration, TrustedKey) -> any DeviceModel)?
        if verifying { makeVerifying = { (configuration, key) in GadgetDevice(configuration, key: key) } }
        return ProtocolDescriptor(
            name: "gadget", summary: "gadgets", configuration: GadgetConfiguration.self,
            makeClient: { GadgetClient(configuration: $0) },
            makeDeviceModel: { GadgetDevice($0) },
            makeVerifyingDeviceModel: makeVerifying
        )
    }

    @Test func theConfigurationsDeclarationsAreTheDescriptorsParameters() {
        #expect(Self.descriptor(verifying: false).parameters == GadgetConfiguration.parameters)
    }

    @Test func theClientAndTheDeviceAreMadeFromTheConfigurationReadFromTheValues() throws {
        let descriptor = Self.descriptor(verifying: true)
        let client = try #require(try descriptor.makeClient(["batch": "32", "label": "x"]) as? GadgetClient)
        #expect(client.configuration.batch == 32 && client.configuration.label == "x")
        let device = try #require(try descriptor.makeDeviceModel([:]) as? GadgetDevice)
        #expect(device.configuration.batch == 8 && device.configuration.label == "plain" && device.key == nil)
        let verifying = try #require(try descriptor.makeDeviceModel(["batch": "2"], trusting: Self.key) as? GadgetDevice)
        #expect(verifying.configuration.batch == 2 && verifying.key == Self.key)
    }

    @Test(arguments: [
        (["batch": "65"], "parameter 'batch': '65' is out of range, expected 1...64"),
        (["bacth": "2"], "protocol 'gadget' has no parameter 'bacth' (known: batch, label)"),
        (["label": "refused"], "parameter 'label': 'refused' is refused"),
    ])
    func badValuesAreRefusedWithTheDeclarationsMessages(values: [String: String], message: String) {
        let descriptor = Self.descriptor(verifying: true)
        let parameters = ProtocolParameters(values)
        let client = #expect(throws: OTAError.self) { try descriptor.makeClient(parameters) }
        let device = #expect(throws: OTAError.self) { try descriptor.makeDeviceModel(parameters) }
        let verifying = #expect(throws: OTAError.self) { try descriptor.makeDeviceModel(parameters, trusting: Self.key) }
        for error in [client, device, verifying] {
            #expect(error?.code == .invalidParameter)
            #expect(error?.message == message)
        }
    }

    @Test func withoutAVerifyingModelAKeyIsRefused() throws {
        let descriptor = Self.descriptor(verifying: false)
        let error = try #require(throws: OTAError.self) { try descriptor.makeDeviceModel([:], trusting: Self.key) }
        #expect(error.code == .invalidParameter)
        #expect(error.message.hasPrefix("a simulated gadget device checks no signatures"))
    }
}
