import Foundation
import OTACore
import OTATestSupport
import OTATrust
import Testing

@testable import OTAProtocolMCUmgr

/// The device model's MCUboot, built with a key, validates the image in slot 1 before swapping
/// it in, as `boot_validate_slot()` does: the device refuses what the host did not check.
@Suite struct MCUbootBootKeyTests {
    static func model(key: String?) throws -> MCUmgrDeviceModel {
        var settings = MCUmgrDeviceModel.Settings()
        settings.bootKey = try key.map { try TrustedKey(pem: try Fixture.data($0), source: $0) }
        return MCUmgrDeviceModel(settings: settings)
    }

    static func client(_ mode: MCUmgrUpdateMode) -> MCUmgrClient {
        var configuration = MCUmgrConfiguration()
        configuration.mode = mode
        return MCUmgrClient(configuration: configuration)
    }

    @Test(arguments: [("ecdsa-p256-4KB.bin", "test-ecdsa-p256.pub.pem"), ("ed25519-4KB.bin", "test-ed25519.pub.pem")], [MCUmgrUpdateMode.test, .confirm])
    func anImageSignedWithTheBootKeyIsSwappedIn(fixture: (image: String, key: String), mode: MCUmgrUpdateMode) async throws {
        let image = try FirmwareImage(bytes: try Fixture.data(fixture.image), name: fixture.image)
        let model = try Self.model(key: fixture.key)
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        _ = try await harness.update(image, using: Self.client(mode)).result.get()
        #expect(model.primaryImage == image.bytes)
        #expect(model.refusedImageCount == 0)
    }

    /// The image signed with the other algorithm's key, or with a byte of its signature flipped:
    /// uploaded, marked, and refused by MCUboot at the reset.
    @Test(arguments: [
        ("ecdsa-p256-4KB.bin", "test-ed25519.pub.pem", false), ("ed25519-4KB.bin", "test-ecdsa-p256.pub.pem", false),
        ("ecdsa-p256-4KB.bin", "test-ecdsa-p256.pub.pem", true), ("ed25519-4KB.bin", "test-ed25519.pub.pem", true),
    ])
    func anImageTheBootKeyDoesNotVerifyIsErasedAndTheOldImageRuns(image name: String, key: String, flipSignature: Bool) async throws {
        var bytes = try Fixture.data(name)
        if flipSignature {
            // The signature TLV is the last one imgtool writes: its last byte is the file's.
            bytes[bytes.endIndex - 1] ^= 0x01
        }
        let image = try FirmwareImage(bytes: bytes, name: name)
        let model = try Self.model(key: key)
        let factory = model.primaryImage
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        let outcome = try await harness.update(image, using: Self.client(.test))
        let error = try outcome.failure()
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("did not keep image 1.2.3 after the reset"))
        #expect(error.message.contains("signed with the key its MCUboot trusts"))
        #expect(model.refusedImageCount == 1)
        #expect(model.swapCount == 0)
        #expect(model.primaryImage == factory)
        // Erased, so that MCUboot does not try it again.
        #expect(model.imageState.slot(1) == nil)
    }

    @Test func withoutABootKeyTheSameImageIsSwappedInUnchecked() async throws {
        var bytes = try Fixture.data("ecdsa-p256-4KB.bin")
        bytes[bytes.endIndex - 1] ^= 0x01
        let image = try FirmwareImage(bytes: bytes, name: "flipped.bin")
        let model = try Self.model(key: nil)
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        _ = try await harness.update(image, using: Self.client(.test)).result.get()
        #expect(model.primaryImage == image.bytes)
    }

    @Test func theDescriptorMakesAVerifyingModelForAKey() throws {
        let key = try TrustedKey(pem: try Fixture.data("test-ed25519.pub.pem"), source: "k")
        let model = try #require(try MCUmgrProtocol.descriptor.makeDeviceModel([:], trusting: key) as? MCUmgrDeviceModel)
        #expect(model.settings.bootKey == key)
        let plain = try #require(try MCUmgrProtocol.descriptor.makeDeviceModel([:], trusting: nil) as? MCUmgrDeviceModel)
        #expect(plain.settings.bootKey == nil)
    }
}
