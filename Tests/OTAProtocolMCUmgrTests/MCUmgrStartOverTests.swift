import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

/// An upload whose bytes the device stored damaged: its SHA-256 check of the finished upload
/// (`"match": false`), or, on a device without that check, the image state afterwards, starts
/// the upload over from byte 0, bounded by the engine's restarts in a row.
@Suite struct MCUmgrStartOverTests {
    typealias Machine = MCUmgrUploadStateMachine
    static let image = MCUmgrUploadStateMachineTests.image
    static let sha = MCUmgrUploadStateMachineTests.sha

    /// Drives `machine` with a device that answers every request, oldest first, with its end,
    /// and `match` on the last one from `matches` (one per upload, the last repeating); returns
    /// the action the machine ends with and the first requests it sent (one per upload).
    static func drive(_ machine: inout Machine, matches: [Bool], notes: inout [String]) throws -> (Machine.Action, [ImageUploadRequest]) {
        var uploads = 0
        var firsts: [ImageUploadRequest] = []
        var outstanding: [Machine.Outbound] = []
        var action = machine.start()
        for _ in 0..<10_000 {
            switch action {
            case .send(let requests, let rewound):
                for request in requests where request.range.lowerBound == 0 {
                    firsts.append(try MCUmgrUploadStateMachineTests.decoded(request))
                    if uploads > 0 { #expect(rewound == 0, "a restart's first request rewinds the progress to 0") }
                }
                outstanding += requests
                action = machine.sent()
            case .awaitResponse:
                guard !outstanding.isEmpty else { return (action, firsts) }
                let request = outstanding.removeFirst()
                let end = request.range.upperBound
                let match = end == image.count ? matches[min(uploads, matches.count - 1)] : nil
                if end == image.count { uploads += 1 }
                action = machine.received(MCUmgrUploadStateMachineTests.response(request, off: end, match: match))
            case .startOver(let reason):
                notes.append(reason)
                #expect(machine.acknowledged == 0)
                #expect(outstanding.isEmpty)
                action = machine.restart()
            case .wait, .finished, .fail:
                return (action, firsts)
            }
        }
        Issue.record("the machine did not end")
        return (action, firsts)
    }

    static func machine(restarts: Int) -> Machine {
        var settings = Machine.Settings(frameLimit: 2475, window: 4, writeLength: 244)
        settings.maximumRestarts = restarts
        return Machine(image: .inMemory(image), sha: sha, settings: settings)
    }

    @Test func aMismatchStartsTheUploadOverWithLengthAndShaAndThenSucceeds() throws {
        var machine = Self.machine(restarts: 5)
        var notes: [String] = []
        let (end, firsts) = try Self.drive(&machine, matches: [false, true], notes: &notes)
        guard case .finished(let match) = end else {
            Issue.record("expected the upload to finish, got \(end)")
            return
        }
        #expect(match == true)
        #expect(notes == ["image failed its SHA-256 on the device; starting over (1 of 5)"])
        #expect(machine.restarts == 1)
        #expect(machine.acknowledged == Self.image.count)
        // Both uploads began with a first request at offset 0 that carries `len` and `sha`.
        #expect(firsts.count == 2)
        for first in firsts {
            #expect(first.offset == 0 && first.length == Self.image.count && first.sha == Self.sha)
        }
    }

    @Test func aDeviceThatAlwaysMismatchesFailsAfterTheBoundWithOneLine() throws {
        var machine = Self.machine(restarts: 2)
        var notes: [String] = []
        let (end, firsts) = try Self.drive(&machine, matches: [false], notes: &notes)
        let error = try #require(MCUmgrUploadStateMachineTests.failure(end))
        #expect(error.code == .verificationFailed)
        #expect(
            error.message
                == "device reports the uploaded image does not match its SHA-256 on 3 uploads in a row; the transfer keeps being corrupted: check the link (distance, interference, the adapter) and run the update again"
        )
        #expect(!error.message.contains("\n"))
        #expect(notes.count == 2)
        #expect(firsts.count == 3)
    }

    @Test func restartsOnEarlierConnectionsCountTowardsTheBound() throws {
        var settings = Machine.Settings(frameLimit: 2475, window: 4, writeLength: 244)
        settings.maximumRestarts = 2
        var machine = Machine(image: .inMemory(Self.image), sha: Self.sha, settings: settings, restartedBefore: 2)
        var notes: [String] = []
        let (end, _) = try Self.drive(&machine, matches: [false], notes: &notes)
        #expect(notes.isEmpty)
        #expect(MCUmgrUploadStateMachineTests.failure(end)?.message.contains("on 3 uploads in a row") == true)
    }

    @Test func withoutRestartsTheFirstMismatchFails() throws {
        var machine = Self.machine(restarts: 0)
        var notes: [String] = []
        let (end, _) = try Self.drive(&machine, matches: [false], notes: &notes)
        #expect(
            MCUmgrUploadStateMachineTests.failure(end)?.message
                == "device reports the uploaded image does not match its SHA-256; the transfer was corrupted")
        #expect(notes.isEmpty)
    }

    // MARK: - Simulated end to end

    static func client(window: Int = 8, mode: MCUmgrUpdateMode = .upload) -> MCUmgrClient {
        var configuration = MCUmgrConfiguration()
        configuration.mode = mode
        configuration.window = window
        return MCUmgrClient(configuration: configuration)
    }

    static func mcuboot(size: Int, seed: UInt64) throws -> FirmwareImage {
        let body = try UpdateHarness.image(size: size, seed: seed).bytes
        return try FirmwareImage(bytes: MCUbootImageWriter.unsigned(body: body, version: .init(major: 2, minor: 1, revision: 0)), name: "start-over")
    }

    static func startOvers(_ outcome: UpdateHarness.Outcome) -> [String] {
        outcome.events.compactMap { event in
            if case .state(.transferring, let detail?, _) = event, detail.contains("starting over") { detail } else { nil }
        }
    }

    @Test(arguments: [1, 8])
    func aCorruptedWriteNowEndsByteIdentical(window: Int) async throws {
        let image = try Self.mcuboot(size: 40_000, seed: 3)
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        var faults = LinkFaults()
        faults.corruptWrites = [30]  // the last byte of a data write: valid CBOR, other bytes stored
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: Self.client(window: window))
        let report = try outcome.result.get()
        #expect(harness.device.dataWritesArrived > 30, "the corruption did not fire")
        #expect(harness.flashContents(image.count) == image.bytes)
        #expect(model.imageState.slot(1)?.hash == (try MCUbootImage(parsing: image.bytes).hash))
        #expect(Self.startOvers(outcome) == ["image failed its SHA-256 on the device; starting over (1 of 5)"])
        #expect(outcome.notes.contains("the device checked the upload against its SHA-256: match"))
        // The whole image went twice, on the same link: a start over is not a reconnection.
        #expect(report.bytesSent == 2 * image.count)
        #expect(report.resumes == 0)
    }

    @Test func aTestBootAfterAStartOverEndsConfirmed() async throws {
        let image = try Self.mcuboot(size: 20_000, seed: 4)
        let model = MCUmgrDeviceModel()
        let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: model)
        var faults = LinkFaults()
        faults.corruptWrites = [12]
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: Self.client(mode: .test))
        _ = try outcome.result.get()
        #expect(model.primaryImage == image.bytes)
        #expect(!model.isTestBoot)
        #expect(Self.startOvers(outcome).count == 1)
    }

    @Test func aDeviceThatAlwaysCorruptsFailsClearlyAfterTheEnginesBound() async throws {
        let image = try Self.mcuboot(size: 12_000, seed: 5)
        let model = MCUmgrDeviceModel()
        model.corruptStoredData()
        var harness = UpdateHarness(profile: .nrf52840, model: model)
        harness.configuration.resume.maximumAttempts = 3
        let outcome = try await harness.update(image, using: Self.client())
        let error = try outcome.failure()
        #expect(error.code == .verificationFailed)
        #expect(error.message.hasPrefix("device reports the uploaded image does not match its SHA-256 on 4 uploads in a row;"))
        #expect(Self.startOvers(outcome).count == 3)
        #expect(model.imageState.slot(1) == nil, "nothing valid landed in slot 1")
        #expect(model.imageState.slot(1)?.pending != true)
    }

    @Test func resumeDisabledMeansTheFirstMismatchFails() async throws {
        let image = try Self.mcuboot(size: 12_000, seed: 6)
        let model = MCUmgrDeviceModel()
        model.corruptStoredData()
        var harness = UpdateHarness(profile: .nrf52840, model: model)
        harness.configuration.resume = .disabled
        let error = try await harness.update(image, using: Self.client()).failure()
        #expect(error.message == "device reports the uploaded image does not match its SHA-256; the transfer was corrupted")
    }

    /// A device without `CONFIG_IMG_ENABLE_IMAGE_CHECK` answers no `match`: the damage shows in
    /// the image state read after the upload (slot 1 lists no valid image), which starts over too.
    @Test func withoutTheDevicesCheckTheImageStateStartsTheUploadOver() async throws {
        let image = try Self.mcuboot(size: 30_000, seed: 7)
        var settings = MCUmgrDeviceModel.Settings()
        settings.checksImage = false
        let model = MCUmgrDeviceModel(settings: settings)
        let harness = UpdateHarness(profile: .nrf52840, model: model)
        var faults = LinkFaults()
        faults.corruptWrites = [25]
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: Self.client())
        _ = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        let startOvers = Self.startOvers(outcome)
        #expect(startOvers.count == 1)
        #expect(startOvers.first?.hasPrefix("slot 1 does not hold the image after the upload (") == true)
        #expect(startOvers.first?.hasSuffix("); starting over (1 of 5)") == true)
    }

    @Test func withoutTheDevicesCheckADeviceThatAlwaysCorruptsFailsAfterTheBound() async throws {
        let image = try Self.mcuboot(size: 12_000, seed: 8)
        var settings = MCUmgrDeviceModel.Settings()
        settings.checksImage = false
        let model = MCUmgrDeviceModel(settings: settings)
        model.corruptStoredData()
        var harness = UpdateHarness(profile: .nrf52840, model: model)
        harness.configuration.resume.maximumAttempts = 2
        let error = try await harness.update(image, using: Self.client()).failure()
        #expect(error.code == .verificationFailed)
        #expect(error.message.hasPrefix("after the upload the device lists no image in slot 1"))
        #expect(error.message.hasSuffix("; gave up after 2 restarts from byte 0"))
        #expect(!error.message.contains("\n"))
    }
}
