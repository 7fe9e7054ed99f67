import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATestSupport
import OTATransportSimulator
import Testing

/// `pipeline=on` and `prn=auto` against the simulated bootloader over the simulated link: the
/// bootloader takes the queued Execute and Create in order, every image arrives byte for byte,
/// and on a bootloader whose receive buffers overflow the adaptive interval completes where no
/// receipts cannot.
@Suite struct NordicDFUPipelineEndToEndTests {
    private func client(_ parameters: ProtocolParameters) throws -> NordicDFUClient {
        NordicDFUClient(configuration: try NordicDFUConfiguration(parameters: parameters))
    }

    private static let pipelined: ProtocolParameters = ["pipeline": "on", "prn": "auto"]

    @Test(arguments: ["app-unsigned", "app-signed", "app-deflated", "sd-bl-app"])
    func nrfutilFixturesUpdateByteIdenticallyPipelined(fixture: String) async throws {
        let parts = try #require(try NordicDFUProtocol.descriptor.containerFormat!.load(try Fixture.url(fixture, "zip")))
        var configuration = NordicBootloaderModel.Configuration()
        configuration.installedSoftDevice = fixture == "app-signed" ? 0x00B7 : fixture == "sd-bl-app" ? 0x0101 : 0x0100
        let model = NordicBootloaderModel(configuration: configuration)
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        for part in parts {
            _ = try await harness.update(part, using: try client(Self.pipelined)).result.get()
            #expect(model.installedImage?.sha256 == SHA256.hash(part.bytes), "\(fixture): \(part.name) differs")
            try await harness.simulation.run { try await harness.simulation.clock.sleep(for: .seconds(1)) }
        }
    }

    @Test(arguments: DeviceProfile.builtIn.map(\.name))
    func aLargeImageArrivesWholeOnEveryProfile(profile: String) async throws {
        let model = NordicBootloaderModel()
        let harness = UpdateHarness(profile: try DeviceProfile.named(profile), model: model)
        let image = try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try UpdateHarness.image(size: 60_000, seed: 5))
        let outcome = try await harness.update(image, using: try client(Self.pipelined))
        _ = try outcome.result.get()
        #expect(model.installedImage?.sha256 == SHA256.hash(image.bytes))
        #expect(model.counters.packetsDropped == 0)
        // One receipt per object (it stands for Calculate Checksum), none in between.
        #expect(model.counters.receiptNotifications == 60_000 / 4096)
    }

    /// The simulator's bootloader takes a queued Execute and Create in arrival order, as the
    /// SDK's scheduler does: the Create rewinds to the end of the object just executed.
    @Test func theModelAnswersAQueuedExecuteAndCreateInOrder() async throws {
        let model = NordicBootloaderModel()
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        let image = try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try UpdateHarness.image(size: 9000, seed: 6))
        let outcome = try await harness.update(image, using: try client(Self.pipelined))
        _ = try outcome.result.get()
        #expect(model.installedImage?.sha256 == SHA256.hash(image.bytes))
        #expect(!outcome.notes.contains { $0.contains("leaving the pipelined flow") })
    }

    /// A slow flash and four receive buffers: a central that sends without receipts outruns
    /// the flash, the pool drops packets, and every attempt at an object fails; `prn=auto`
    /// lowers the interval until the packets fit, and the update completes.
    @Test func onABootloaderThatDropsPacketsAutoCompletesWhereNoReceiptsFail() async throws {
        func run(_ parameters: ProtocolParameters) async throws -> (UpdateHarness.Outcome, NordicBootloaderModel) {
            var model: NordicBootloaderModel!
            let harness = UpdateHarness(profile: .nrf52840) { simulation in
                model = NordicBootloaderModel(configuration: .droppingPackets, clock: { simulation.now })
                return model
            }
            let image = try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try UpdateHarness.image(size: 40_000, seed: 7))
            let outcome = try await harness.update(image, using: try client(parameters))
            if case .success = outcome.result { #expect(model.installedImage?.sha256 == SHA256.hash(image.bytes)) }
            return (outcome, model)
        }
        let (none, dropping) = try await run(["pipeline": "on", "prn": "0"])
        #expect(try none.failure().message.contains("the bootloader drops packets: packet receipts are off"))
        #expect(dropping.counters.packetsDropped > 0)
        let (auto, adapting) = try await run(Self.pipelined)
        _ = try auto.result.get()
        #expect(adapting.counters.packetsDropped > 0)  // it had to find out
    }
}
