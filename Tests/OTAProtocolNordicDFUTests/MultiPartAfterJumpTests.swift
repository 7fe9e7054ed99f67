import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolNordicDFU

/// A multi-part package (SoftDevice and bootloader, then the application) sent to a device
/// running its application: the first part jumps into the bootloader, which comes back at the
/// next address; after it the bootloader stays in DFU mode there (the new SoftDevice
/// invalidated the application), so the second part must start from where the engine found
/// the device, not from the address the update began at, which is now silent.
@Suite struct MultiPartAfterJumpTests {
    static let address = "C0:FF:EE:00:00:10"
    static let bootloaderAddress = "C0:FF:EE:00:00:11"

    /// A device at ``address`` running its application; its bootloader has the SoftDevice the
    /// fixture requires.
    private func scene() -> (UpdateHarness, NordicApplicationModel) {
        var configuration = NordicBootloaderModel.Configuration()
        configuration.installedSoftDevice = 0x0101
        let model = NordicApplicationModel(applicationName: "Tracker", bootloader: NordicBootloaderModel(configuration: configuration))
        var harness = UpdateHarness(profile: .nrf52840, model: model, seed: 3, address: Self.address)
        harness.configuration.randomSeed = 3
        return (harness, model)
    }

    private func parts() throws -> [FirmwareImage] {
        try #require(try NordicDFUProtocol.descriptor.containerFormat!.load(try Fixture.url("sd-bl-app", "zip")))
    }

    /// Sends part 1, lets the device restart, and returns its outcome.
    private func firstPart(_ harness: UpdateHarness, _ part: FirmwareImage, connector: any Connector) async throws -> UpdateHarness.Outcome {
        let outcome = try await harness.update(part, using: NordicDFUClient(), connector: connector)
        try await harness.simulation.run { try await harness.simulation.clock.sleep(for: .seconds(1)) }
        return outcome
    }

    @Test func theApplicationPartStartsAtTheBootloaderTheEngineFound() async throws {
        let (harness, model) = scene()
        let parts = try parts()
        // The session's connector, as every TransportSession hands it out: it follows the device.
        let connector = FollowingConnector(SimulatedConnector(device: harness.device, address: Self.address))
        let first = try await firstPart(harness, parts[0], connector: connector)
        _ = try first.result.get()
        #expect(first.notes.contains { $0.hasPrefix("found the device again at \(Self.bootloaderAddress)") })
        #expect(model.bootloader.installedImage?.firmwareType == .softdeviceBootloader)
        // The SoftDevice invalidated the application: the bootloader waits at the next address,
        // and the address the update began at is silent.
        #expect(model.isInBootloader)
        #expect(harness.device.advertisedAddress == Self.bootloaderAddress)
        #expect(connector.airAddress == Self.bootloaderAddress)

        let second = try await harness.update(parts[1], using: NordicDFUClient(), connector: connector)
        _ = try second.result.get()
        // Straight to the bootloader: no second jump, no search.
        #expect(!second.notes.contains { $0.hasPrefix("looking for the device") })
        #expect(model.bootloader.installedImage?.firmwareType == .application)
        #expect(model.bootloader.installedImage?.sha256 == SHA256.hash(parts[1].bytes))
        let expected = parts[1].bytes + Data(repeating: 0xFF, count: 1024) + parts[0].bytes[4096..<6144]
        #expect(harness.flashContents(6144) == expected)
        // Once restarted, the new application runs at its own address again.
        try await harness.simulation.run { try await harness.simulation.clock.sleep(for: .seconds(1)) }
        #expect(!model.isInBootloader)
        #expect(harness.device.advertisedAddress == Self.address)
    }

    /// What the sessions did before they followed the device: the application part goes to the
    /// original address, where nothing answers, and the application is never sent.
    @Test func fromTheOriginalConnectorTheApplicationPartFindsNothing() async throws {
        var (harness, model) = scene()
        harness.configuration.resume.maximumAttempts = 1
        let parts = try parts()
        let original = SimulatedConnector(device: harness.device, address: Self.address)
        _ = try await firstPart(harness, parts[0], connector: original).result.get()
        let error = try await harness.update(parts[1], using: NordicDFUClient(), connector: original).failure()
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains(Self.address))
        #expect(model.bootloader.installedImage?.firmwareType == .softdeviceBootloader)
        #expect(model.isInBootloader)
    }
}
