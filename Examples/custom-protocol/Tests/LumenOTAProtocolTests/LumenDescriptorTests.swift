import LumenOTAProtocol
import OTACore
import Testing

/// Registering the descriptor is all an app does, so its default family must recognise its own
/// demo bulb.
@Suite struct LumenDescriptorTests {
    @Test func theDefaultFamilyRecognisesTheDemoBulb() throws {
        let descriptor = LumenProtocol.descriptor
        let family = try #require(descriptor.defaultDeviceFamily(source: "test"))
        #expect(family.protocolName == "lumen")
        #expect(family.configuration?.responseTimeout == .seconds(5))
        let bulb = try #require(descriptor.demoDevices.first)
        let model = try descriptor.makeDeviceModel(bulb.parameters)
        let advertisement = Advertisement(
            name: bulb.advertisedName, serviceUUIDs: model.services.map(\.uuid), manufacturerData: bulb.manufacturerData, rssi: bulb.rssi
        )
        #expect(family.match.matches(advertisement))
        let error = try #require(throws: OTAError.self) { try descriptor.makeClient(["batch": "1"]) }
        #expect(error.message == "protocol 'lumen' has no parameter 'batch' (known: none)")
    }
}
