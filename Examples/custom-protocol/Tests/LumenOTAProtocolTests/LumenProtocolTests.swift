import Foundation
import LumenOTAProtocol
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@Suite struct LumenProtocolTests {
    @Test func wireFormat() {
        #expect([UInt8](LumenCommand.begin(size: 0x0102_0304).encoded) == [0x42, 0x04, 0x03, 0x02, 0x01])
        #expect(LumenCommand(decoding: LumenCommand.end(crc: 7).encoded) == .end(crc: 7))
        #expect(LumenCommand(decoding: Data([0x44])) == nil)  // data without payload
    }

    @Test(arguments: [1, 181, 182, 183, 50_000])
    func imageArrivesByteIdentical(size: Int) async throws {
        let harness = UpdateHarness(profile: .esp32MTU185, model: LumenDeviceModel())
        let image = try UpdateHarness.image(size: size)
        let report = try await harness.update(image, using: LumenClient()).result.get()
        #expect(harness.flashContents(size) == image.bytes)
        #expect(report.chunkSize == 181)
    }

    @Test func corruptedFlashIsCaughtAtTheEnd() async throws {
        let harness = UpdateHarness(profile: .esp32MTU185, model: LumenDeviceModel())
        // Lumen writes with response, which the link's data-write faults do not touch: corrupt a
        // byte already in flash instead, to prove the bulb's CRC check has teeth.
        let image = try UpdateHarness.image(size: 10_000)
        let device = harness.device
        harness.simulation.schedule(at: .seconds(2)) { try? device.flash.write(Data([0x00]), at: 10) }
        let error = try await harness.update(image, using: LumenClient()).failure()
        #expect(error.code == .verificationFailed)
        #expect(error.message == "Lumen bulb rejected end: CRC mismatch")
    }

    @Test func registersAndIsSelectableByName() throws {
        let registry = ProtocolRegistry([LumenProtocol.descriptor])
        #expect(try registry.descriptor(named: "lumen").summary.hasPrefix("Lumen smart bulbs"))
        let catalog = try DeviceCatalog.parse(
            Data(#"{"catalog": 1, "families": [{"name": "bulbs", "match": {"name": "Lumen-*"}, "protocol": "lumen"}]}"#.utf8),
            source: "lumen.json", registry: registry
        )
        #expect(try catalog.family(for: Advertisement(name: "Lumen-A19"), device: "d")?.protocolName == "lumen")
    }
}
