import Foundation
import OTACore
import OTATestSupport
import Testing

@testable import OTAProtocolMCUmgr

/// The version the device runs, read from the SMP image list's active slot, against the one
/// the update installs: a downgrade is refused before any upload write, and allowed with the flag.
@Suite struct MCUmgrRunningVersionTests {
    /// A device whose slot 0 runs 3.0.0 while its Device Information says 1.0.0 (nRF52840
    /// profile): only the image list tells the truth.
    static func device() -> MCUmgrDeviceModel {
        let factory = MCUbootImageWriter.unsigned(body: Data(repeating: 0x5A, count: 2048), version: MCUbootVersion(major: 3, minor: 0, revision: 0))
        return MCUmgrDeviceModel(settings: MCUmgrDeviceModel.Settings(factoryImage: factory))
    }

    static func image(_ major: UInt8) throws -> FirmwareImage {
        try FirmwareImage(
            bytes: MCUbootImageWriter.unsigned(body: Data(repeating: 0xA5, count: 3000), version: MCUbootVersion(major: major, minor: 0, revision: 0)),
            name: "app-\(major).bin")
    }

    static func harness(allowingDowngrade: Bool, image: FirmwareImage) -> (UpdateHarness, MCUmgrDeviceModel) {
        let model = device()
        var harness = UpdateHarness(profile: .nrf52840, model: model)
        let declared = MCUbootImageFormat().declaredVersion(of: image).flatMap(FirmwareVersion.init)!
        harness.configuration.preflight.firmwareVersion = VersionRequirement(
            version: declared, source: "the MCUboot image header", allowsDowngrade: allowingDowngrade)
        return (harness, model)
    }

    @Test func anOlderImageThanTheActiveSlotIsRefusedBeforeAnyUploadWrite() async throws {
        let image = try Self.image(2)
        let (harness, model) = Self.harness(allowingDowngrade: false, image: image)
        let outcome = try await harness.update(image, using: MCUmgrClient())
        let error = try outcome.failure()
        #expect(error.code == .incompatible)
        #expect(
            error.message
                == "the device runs firmware 3.0.0 (SMP image list, slot 0), newer than the 2.0.0 of the MCUboot image header; pass --allow-downgrade to install an older version"
        )
        // Nothing of the image was written: no upload, slot 1 untouched.
        #expect(harness.device.flash.bytesWritten == 0)
        #expect(model.imageState.slot(1) == nil)
        #expect(!outcome.states.contains(.transferring))
    }

    @Test func withTheFlagTheOlderImageIsInstalledAndSaysSo() async throws {
        let image = try Self.image(2)
        let (harness, model) = Self.harness(allowingDowngrade: true, image: image)
        let outcome = try await harness.update(image, using: MCUmgrClient())
        _ = try outcome.result.get()
        #expect(outcome.notes.contains { $0.contains("runs firmware 3.0.0 (SMP image list, slot 0)") && $0.contains("installing the older version") })
        #expect(model.primaryImage == image.bytes)
    }

    @Test func aNewerImageSaysFromWhatToWhat() async throws {
        let image = try Self.image(4)
        let (harness, _) = Self.harness(allowingDowngrade: false, image: image)
        let outcome = try await harness.update(image, using: MCUmgrClient())
        _ = try outcome.result.get()
        #expect(outcome.notes.contains("version: device 3.0.0 (SMP image list, slot 0) → 4.0.0 (the MCUboot image header)"))
    }

    @Test func theActiveSlotIsTheRunningOne() {
        let hash = Data(repeating: 1, count: 32)
        let state = ImageStateResponse(images: [
            ImageSlotState(slot: 0, version: "1.0.0", hash: hash, confirmed: true), ImageSlotState(slot: 1, version: "2.0.0", hash: hash, active: true),
        ])
        #expect(MCUmgrClient.runningVersion(in: state) == ReportedVersion(text: "2.0.0", source: "SMP image list, slot 1"))
        let inactive = ImageStateResponse(images: [ImageSlotState(slot: 0, version: "1.0.0", hash: hash)])
        #expect(MCUmgrClient.runningVersion(in: inactive)?.text == "1.0.0")
        #expect(MCUmgrClient.runningVersion(in: ImageStateResponse(images: [])) == nil)
    }
}
