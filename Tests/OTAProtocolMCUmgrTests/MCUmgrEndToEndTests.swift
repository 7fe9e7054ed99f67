import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

/// Whole updates of the MCUmgr device model in the simulator, through the engine.
@Suite struct MCUmgrEndToEndTests {
    static func client(_ mode: MCUmgrUpdateMode, window: Int = 8, eraseTimeout: Duration = .seconds(30)) -> MCUmgrClient {
        var configuration = MCUmgrConfiguration()
        configuration.mode = mode
        configuration.window = window
        configuration.eraseTimeout = eraseTimeout
        return MCUmgrClient(configuration: configuration)
    }

    static func fixture(_ name: String) throws -> FirmwareImage {
        try FirmwareImage(bytes: Fixture.data(name), name: name)
    }

    static func hash(_ image: FirmwareImage) throws -> Data { try MCUbootImage(parsing: image.bytes).hash }

    static let profiles: [DeviceProfile] = DeviceProfile.builtIn

    @Test(arguments: ["unsigned-1B.bin", "unsigned-200KB.bin", "unsigned-1MB.bin"], DeviceProfile.builtIn)
    func imgtoolImagesUploadByteIdenticallyOnEveryProfile(name: String, profile: DeviceProfile) async throws {
        let image = try Self.fixture(name)
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: profile, model: model)
        let outcome = try await harness.update(image, using: Self.client(.upload))
        guard image.count <= profile.slotSize else {
            // The nRF52840's 1 MiB slot is smaller than the 1 MB image with its header and TLVs.
            let error = try outcome.failure()
            #expect(error.code == .deviceRejected)
            #expect(error.message == "device rejected image upload at byte 0: image management rc 30 (image too large)")
            return
        }
        let report = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(model.imageState.slot(1)?.hash == (try Self.hash(image)))
        #expect(model.imageState.slot(1)?.pending == false)
        #expect(report.bytesSent == image.count)
        #expect(outcome.notes.contains("the device checked the upload against its SHA-256: match"))
    }

    /// Images whose length lands just below, on and above one ATT write, one frame's data and
    /// the device buffer, pipelined and one at a time.
    @Test(arguments: [1, 8])
    func imagesAroundTheWriteAndBufferSizesLandByteIdentical(window: Int) async throws {
        let overhead = MCUbootImageWriter.unsigned(body: Data([0]), version: .init(major: 1, minor: 0, revision: 0)).count - 1
        for profile in [DeviceProfile.esp32MTU23, .nrf52840] {
            let write = profile.link.deviceMaximumMTU - 3
            for total in [write - 1, write, write + 1, 2 * write, 488, 512, 2440, 2475, 2476, 4 * 2440 + 3] where total > overhead {
                let body = Data((0..<(total - overhead)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ total) })
                let image = try FirmwareImage(bytes: MCUbootImageWriter.unsigned(body: body, version: .init(major: 3, minor: 0, revision: 0)), name: "\(total)")
                #expect(image.count == total)
                for bufferSize in [512, 2475] {
                    let model = MCUmgrDeviceModel(settings: .init(bufferSize: bufferSize))
                    let harness = UpdateHarness(profile: profile, model: model)
                    let outcome = try await harness.update(image, using: Self.client(.upload, window: window))
                    #expect(throws: Never.self, "\(profile.name), \(total) bytes, buffer \(bufferSize)") { try outcome.result.get() }
                    #expect(harness.flashContents(total) == image.bytes, "\(profile.name), \(total) bytes, buffer \(bufferSize)")
                }
            }
        }
    }

    @Test func testModeBootsTheImageThenConfirmsItVerifiedAfterTheReset() async throws {
        let image = try Self.fixture("unsigned-200KB.bin")
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        let outcome = try await harness.update(image, using: Self.client(.test))
        _ = try outcome.result.get()
        #expect(harness.device.rebootCount == 1)
        #expect(model.swapCount == 1)
        #expect(model.primaryImage == image.bytes)
        #expect(model.isTestBoot == false)
        let state = model.imageState
        #expect(state.slot(0)?.hash == (try Self.hash(image)))
        #expect(state.slot(0)?.confirmed == true)
        #expect(outcome.states.contains(.committing))
        #expect(outcome.notes.contains { $0.hasPrefix("reconnecting on the protocol's request: device resets so MCUboot swaps in image") })
        // Confirmed: another reset keeps it.
        harness.device.reboot()
        #expect(model.imageState.slot(0)?.hash == (try Self.hash(image)))
    }

    @Test func confirmModeSwapsInForGood() async throws {
        let image = try Self.fixture("unsigned-200KB.bin")
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: model)
        let outcome = try await harness.update(image, using: Self.client(.confirm))
        _ = try outcome.result.get()
        #expect(harness.device.rebootCount == 1)
        #expect(model.primaryImage == image.bytes)
        #expect(model.imageState.slot(0)?.confirmed == true)
        harness.device.reboot()
        #expect(model.primaryImage == image.bytes)
    }

    @Test func aDeviceThatRevertsFailsTheUpdateNamingTheSlots() async throws {
        let image = try Self.fixture("unsigned-200KB.bin")
        let model = MCUmgrDeviceModel()
        model.failToBoot(hash: try Self.hash(image))
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        let error = try await harness.update(image, using: Self.client(.test)).failure()
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("did not keep image 2.0.0 after the reset"))
        #expect(error.message.contains("slot 0: 1.0.0"))
        #expect(error.message.contains("slot 1: 2.0.0"))
        #expect(!error.message.contains("\n"))
        #expect(model.primaryImage == MCUmgrDeviceModel.defaultFactoryImage)
    }

    @Test func anImageAlreadyRunningIsNotSentAgain() async throws {
        let image = try Self.fixture("unsigned-4KB.bin")
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        _ = try await harness.update(image, using: Self.client(.confirm)).result.get()
        let again = try await harness.update(image, using: Self.client(.confirm))
        let report = try again.result.get()
        #expect(report.bytesSent == 0)
        #expect(again.notes.contains { $0.contains("runs, confirmed") })
    }

    @Test func aLostLinkMidUploadResumesResendingAtMostOneWindow() async throws {
        let image = try Self.fixture("unsigned-200KB.bin")
        for window in [1, 4] {
            let model = MCUmgrDeviceModel()
            let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: model)
            var faults = LinkFaults()
            faults.disconnectAtBytes = [100_000]
            harness.device.faults = faults
            let outcome = try await harness.update(image, using: Self.client(.upload, window: window))
            let report = try outcome.result.get()
            #expect(report.resumes == 1)
            #expect(harness.flashContents(image.count) == image.bytes)
            let resent = report.bytesSent - image.count
            #expect(resent > 0 || window == 1)
            #expect(resent <= window * 2475, "window \(window): re-sent \(resent) bytes (one window is at most \(window) buffers)")
            #expect(outcome.notes.contains { $0.hasPrefix("resuming: device holds") })
        }
    }

    @Test func aDeviceWithoutParametersGetsOneWriteAtATime() async throws {
        var settings = MCUmgrDeviceModel.Settings()
        settings.answersParameters = false
        let harness = UpdateHarness(profile: .nrf52840, model: MCUmgrDeviceModel(settings: settings))
        let image = try Self.fixture("unsigned-4KB.bin")
        let outcome = try await harness.update(image, using: Self.client(.upload))
        _ = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(
            outcome.notes.contains {
                $0.hasPrefix("the device has no MCUmgr parameters command (device rejected MCUmgr parameters read: rc 8 (not supported))")
            })
    }

    @Test func busyAnswersAreRetried() async throws {
        let model = MCUmgrDeviceModel()
        model.answerBusy(3)
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        let image = try Self.fixture("unsigned-200KB.bin")
        let outcome = try await harness.update(image, using: Self.client(.upload))
        _ = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(outcome.notes.contains { $0.contains("3 busy answer(s)") })
    }

    @Test func aSlowEraseIsWaitedForUnderTheEraseTimeoutOnly() async throws {
        // 1 MB on ESP32 flash, erased first: 257 sectors of 45 ms, 11.6 s, longer than the 10 s
        // response timeout.
        var settings = MCUmgrDeviceModel.Settings()
        settings.eraseMode = .wholeImageFirst
        let image = try Self.fixture("unsigned-1MB.bin")
        let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: MCUmgrDeviceModel(settings: settings))
        _ = try await harness.update(image, using: Self.client(.upload)).result.get()
        #expect(harness.flashContents(image.count) == image.bytes)

        var short = UpdateHarness(profile: .esp32S3MTU244TwoM, model: MCUmgrDeviceModel(settings: settings))
        short.configuration.resume.maximumAttempts = 0
        let error = try await short.update(image, using: Self.client(.upload, eraseTimeout: .seconds(2))).failure()
        #expect(error.code == .timeout)
        #expect(error.message.contains("first image upload response (the device erases its slot first)"))
    }

    @Test func aBrokenImageIsRefusedBeforeConnecting() throws {
        var bytes = try Fixture.data("unsigned-4KB.bin")
        bytes[100] ^= 0xFF
        let image = try FirmwareImage(bytes: bytes, name: "broken.bin")
        let error = #expect(throws: OTAError.self) { try Self.client(.test).check(image) }
        #expect(error?.code == .invalidImage)
        #expect(error?.message.hasPrefix("broken.bin is not a valid MCUboot image: ") == true)
        #expect(throws: OTAError.self) { try Self.client(.test).check(try FirmwareImage(bytes: Data(repeating: 1, count: 100), name: "raw.bin")) }
    }

    @Test func theDefaultFamilyRecognisesTheDemoDevice() throws {
        let descriptor = MCUmgrProtocol.descriptor
        let family = try #require(descriptor.defaultFamily)
        #expect(family.match.services == [MCUmgrGATTProfile.defaultService])
        let demo = try #require(descriptor.demoDevices.first)
        #expect(demo.name == "zephyr-sensor")
        #expect(try DeviceProfile.named(demo.hardwareProfile).name == "nrf52840-mtu244-2m")
        #expect(try descriptor.makeDeviceModel([:]).services.map(\.uuid) == [MCUmgrGATTProfile.defaultService])
        #expect(throws: OTAError.self) { try descriptor.makeClient(["mode": "swap"]) }
        #expect(throws: OTAError.self) { try descriptor.makeClient(["window": "0"]) }
    }

    @Test func theContainerFormatInspectsImagesAndRefusesBrokenOnesBeforeConnecting() throws {
        let format = MCUbootImageFormat()
        let url = try #require(Bundle.module.url(forResource: "ecdsa-p256-4KB.bin", withExtension: nil, subdirectory: "Fixtures"))
        let inspection = try #require(try format.inspect(url))
        #expect(inspection.problems.isEmpty)
        #expect(
            inspection.report.contains(
                "hash (SHA-256 TLV, what image state reports): \(Hex.bytes(try MCUbootImage(parsing: Fixture.data("ecdsa-p256-4KB.bin")).hash))"))
        #expect(try format.load(url)?.first?.bytes == (try Fixture.data("ecdsa-p256-4KB.bin")))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mcumgr-format-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let truncated = directory.appendingPathComponent("truncated.bin")
        try Fixture.data("unsigned-4KB.bin").prefix(3000).write(to: truncated)
        #expect(try format.inspect(truncated)?.problems.first?.contains("truncated") == true)
        let error = #expect(throws: OTAError.self) { try format.load(truncated) }
        #expect(error?.code == .invalidImage)
        let raw = directory.appendingPathComponent("raw.bin")
        try Data(repeating: 0x42, count: 100).write(to: raw)
        #expect(try format.inspect(raw) == nil)
        #expect(try format.load(raw) == nil)
        #expect(format.declaredVersion(of: try Self.fixture("ecdsa-p256-4KB.bin")) == "1.2.3")
        #expect(format.declaredVersion(of: try FirmwareImage(bytes: Data(repeating: 0x42, count: 100))) == nil)
        // Bytes in memory are never claimed, so other protocols send MCUboot images as they are.
        #expect(try format.load(Fixture.data("unsigned-4KB.bin"), name: "x.bin") == nil)
    }

    @Test(arguments: [(8, 2, 2), (8, 4, 4), (1, 4, 1), (3, 16, 3)])
    func theWindowIsTheSmallerOfTheParameterAndTheDevicesBufferCount(window: Int, bufferCount: Int, inFlight: Int) async throws {
        let harness = UpdateHarness(profile: .nrf52840, model: MCUmgrDeviceModel(settings: .init(bufferSize: 1024, bufferCount: bufferCount)))
        let image = try Self.fixture("unsigned-200KB.bin")
        let outcome = try await harness.update(image, using: Self.client(.upload, window: window))
        _ = try outcome.result.get()
        #expect(outcome.notes.contains("device buffers: \(bufferCount) × 1024 bytes; \(inFlight) request(s) in flight, 244-byte writes"))
        #expect(harness.flashContents(image.count) == image.bytes)
    }
}
