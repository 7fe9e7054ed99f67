import OTACore
import Testing

@Suite struct ProtocolSelectionTests {
    private let family = DeviceFamily(
        name: "sensor", match: .init(namePattern: GlobPattern("ACME-*")), protocolName: "alpha", parameters: ["batch": "8"], source: "c.json"
    )

    private func package(protocolName: String?) -> FirmwarePackage {
        FirmwarePackage(name: "p", version: "1", protocolName: protocolName, families: [], hardware: [], images: [], source: "pkg/manifest.json")
    }

    @Test func explicitProtocolOverridesEverything() throws {
        let selection = try ProtocolSelection.decide(
            explicitProtocol: "beta", explicitParameters: ["x": "1"], package: package(protocolName: "gamma"), family: family, device: "d"
        )
        #expect(selection.protocolName == "beta")
        #expect(selection.parameters.values == ["x": "1"])  // the family's are for another protocol
        #expect(selection.reasons.last == "--param x=1")
    }

    @Test func familyDecidesAndBringsItsParameters() throws {
        let selection = try ProtocolSelection.decide(explicitProtocol: nil, explicitParameters: ["batch": "4"], package: nil, family: family, device: "d")
        #expect(selection.protocolName == "alpha")
        #expect(selection.parameters["batch"] == "4")
        #expect(selection.reasons.first?.hasPrefix("d matches family 'sensor' (c.json): name matches 'ACME-*'") == true)
    }

    @Test func packageDecidesWhenNoFamilyMatches() throws {
        let selection = try ProtocolSelection.decide(
            explicitProtocol: nil, explicitParameters: [:], package: package(protocolName: "beta"), family: nil, device: "d")
        #expect(selection.protocolName == "beta")
    }

    @Test func packageAndFamilyDisagreeing() throws {
        let error = try #require(throws: OTAError.self) {
            try ProtocolSelection.decide(
                explicitProtocol: nil, explicitParameters: [:], package: package(protocolName: "beta"), family: family, device: "sim:x")
        }
        #expect(error.code == .selectionFailed)
        #expect(
            error.message
                == "the package (pkg/manifest.json) says protocol 'beta' but sim:x's family 'sensor' (c.json) says 'alpha'; fix one, or pass --protocol to decide"
        )
    }

    @Test func nothingDecides() throws {
        let error = try #require(throws: OTAError.self) {
            try ProtocolSelection.decide(explicitProtocol: nil, explicitParameters: [:], package: nil, family: nil, device: "sim:x")
        }
        #expect(error.message.hasPrefix("no protocol for sim:x"))
    }
}
