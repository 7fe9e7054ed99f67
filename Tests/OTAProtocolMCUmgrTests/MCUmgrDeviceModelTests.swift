import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTAProtocolMCUmgr

/// A peripheral host without a link: collects notifications and reboot requests.
final class RecordingPeripheral: PeripheralContext {
    let flash: any FlashStorage
    private let notes = Mutex<[Data]>([])
    private let reboots = Mutex<[Duration]>([])

    init(capacity: Int = 1 << 20) { flash = NORFlash(capacity: capacity) }

    func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }
    func notify(_ value: Data, on characteristic: CharacteristicID) { notes.withLock { $0.append(value) } }
    func reboot(after delay: Duration) { reboots.withLock { $0.append(delay) } }

    var rebootRequests: [Duration] { reboots.withLock { $0 } }
    func takeNotifications() -> [Data] {
        notes.withLock { notes in
            defer { notes = [] }
            return notes
        }
    }
}

/// The device model spoken to directly, request by request.
struct DeviceUnderTest {
    let model: MCUmgrDeviceModel
    let peripheral = RecordingPeripheral()
    var sequence: UInt8 = 0

    init(settings: MCUmgrDeviceModel.Settings = .init()) {
        model = MCUmgrDeviceModel(settings: settings)
        model.connected(peripheral)
    }

    /// Sends `request` in writes of `writeLength` and returns the reassembled response.
    mutating func send(_ request: MCUmgrRequest, writeLength: Int = 244, version: UInt8 = 1) throws -> SMPMessage {
        var message = request.message(sequence: sequence)
        message.header.version = version
        sequence &+= 1
        let frame = message.encoded
        for start in stride(from: 0, to: frame.count, by: writeLength) {
            _ = model.write(frame[start..<min(start + writeLength, frame.count)], to: model.profile.smp, kind: .withoutResponse, peripheral: peripheral)
        }
        var reassembler = SMPReassembler()
        var frames: [Data] = []
        for fragment in peripheral.takeNotifications() {
            #expect(fragment.count <= max(20, writeLength))
            frames += try reassembler.append(fragment)
        }
        try #require(frames.count == 1, "expected one response, got \(frames.count)")
        return try SMPMessage(decoding: frames[0])
    }

    mutating func error(_ request: MCUmgrRequest, version: UInt8 = 1) throws -> SMPDeviceError? {
        SMPDeviceError(payload: try send(request, version: version).payload)
    }

    mutating func upload(_ image: Data, chunk: Int = 1000) throws {
        var offset = 0
        while offset < image.count {
            let end = min(offset + chunk, image.count)
            let request =
                offset == 0
                ? ImageUploadRequest(length: image.count, offset: 0, sha: Data(SHA256.hash(image)), data: image[0..<end])
                : ImageUploadRequest(offset: offset, data: image[offset..<end])
            let response = try send(.upload(request))
            offset = try ImageUploadResponse(payload: response.payload).offset
        }
    }

    mutating func state() throws -> ImageStateResponse { try ImageStateResponse(payload: send(.readImageState).payload) }

    func reboot() {
        model.rebooted()
        model.connected(peripheral)
    }
}

@Suite struct MCUmgrDeviceModelTests {
    static let image = MCUbootImageWriter.unsigned(
        body: Data((0..<30_000).map { UInt8(truncatingIfNeeded: $0) }), version: .init(major: 2, minor: 1, revision: 3))
    static var hash: Data { try! MCUbootImage(parsing: image).hash }

    /// Zephyr registers its echo handler for read and write alike; mcumgr-toolkit sends a read.
    /// (Bytes as mcumgr-toolkit 0.20.0 sent them over UDP.)
    @Test func answersEchoSentAsARead() throws {
        let device = DeviceUnderTest()
        let request = Data(hexString: "0800000600009100a16164626869")
        _ = device.model.write(request, to: device.model.profile.smp, kind: .withoutResponse, peripheral: device.peripheral)
        var reassembler = SMPReassembler()
        let frames = try device.peripheral.takeNotifications().flatMap { try reassembler.append($0) }
        let response = try SMPMessage(decoding: try #require(frames.first))
        #expect(response.header.operation == .readResponse && response.header.sequence == 0x91)
        #expect(response.payload["r"]?.textValue == "hi")
    }

    @Test func startsWithAConfirmedFactoryImageAndAnswersParametersAndEcho() throws {
        var device = DeviceUnderTest(settings: .init(bufferSize: 512, bufferCount: 3))
        let state = try device.state()
        #expect(state.images.count == 1)
        #expect(state.slot(0)?.version == "1.0.0")
        #expect(state.slot(0)?.active == true && state.slot(0)?.confirmed == true)
        #expect(try MCUmgrParameters(payload: device.send(.parameters).payload) == MCUmgrParameters(bufferSize: 512, bufferCount: 3))
        #expect(try device.send(.echo("ping")).payload["r"]?.textValue == "ping")
        let response = try device.send(.readImageState)
        #expect(response.header.operation == .readResponse)
        #expect(response.header.version == 1)
    }

    @Test func uploadIntoSlotOneThenTestSwapConfirm() throws {
        var device = DeviceUnderTest()
        try device.upload(Self.image)
        #expect(device.peripheral.flash.read(0..<Self.image.count) == Self.image)
        var state = try device.state()
        #expect(state.slot(1)?.hash == Self.hash)
        #expect(state.slot(1)?.version == "2.1.3")
        state = try ImageStateResponse(payload: device.send(.setImageState(hash: Self.hash, confirm: false)).payload)
        #expect(state.slot(1)?.pending == true && state.slot(1)?.permanent == false)
        // Confirming while the test is pending: IMAGE_ALREADY_PENDING.
        #expect(try device.error(.setImageState(hash: Self.hash, confirm: true)) == .group(1, code: 28))
        // Erasing the pending slot: NO_FREE_SLOT.
        #expect(try device.error(.erase(slot: 1)) == .group(1, code: 9))
        #expect(try device.send(.reset).payload == .map([]))
        #expect(device.peripheral.rebootRequests == [.milliseconds(250)])
        device.reboot()
        state = try device.state()
        #expect(state.slot(0)?.hash == Self.hash)
        #expect(state.slot(0)?.confirmed == false)
        #expect(state.slot(1)?.version == "1.0.0")
        #expect(device.model.isTestBoot)
        // Slot 1 holds the revert image: no upload, no erase.
        #expect(try device.error(.erase(slot: nil)) == .group(1, code: 9))
        state = try ImageStateResponse(payload: device.send(.setImageState(hash: nil, confirm: true)).payload)
        #expect(state.slot(0)?.confirmed == true)
        device.reboot()
        #expect(try device.state().slot(0)?.hash == Self.hash)
        #expect(device.model.swapCount == 1)
    }

    @Test func anUnconfirmedTestBootRevertsAtTheNextReset() throws {
        var device = DeviceUnderTest()
        try device.upload(Self.image)
        _ = try device.send(.setImageState(hash: Self.hash, confirm: false))
        device.reboot()
        #expect(try device.state().slot(0)?.hash == Self.hash)
        device.reboot()
        let state = try device.state()
        #expect(state.slot(0)?.version == "1.0.0")
        #expect(state.slot(0)?.confirmed == true)
        #expect(state.slot(1)?.hash == Self.hash)
        #expect(state.slot(1)?.pending == false)
        #expect(device.model.swapCount == 2)
    }

    @Test func confirmSwapsInForGood() throws {
        var device = DeviceUnderTest()
        try device.upload(Self.image)
        let state = try ImageStateResponse(payload: device.send(.setImageState(hash: Self.hash, confirm: true)).payload)
        #expect(state.slot(1)?.permanent == true)
        device.reboot()
        device.reboot()
        #expect(try device.state().slot(0)?.hash == Self.hash)
        #expect(try device.state().slot(0)?.confirmed == true)
    }

    @Test func wrongOffsetsAreAnsweredWithTheExpectedOneAndTheShaResumes() throws {
        var device = DeviceUnderTest()
        let sha = Data(SHA256.hash(Self.image))
        var response = try device.send(.upload(ImageUploadRequest(length: Self.image.count, offset: 0, sha: sha, data: Self.image[0..<1000])))
        #expect(try ImageUploadResponse(payload: response.payload).offset == 1000)
        response = try device.send(.upload(ImageUploadRequest(offset: 5000, data: Self.image[5000..<6000])))
        #expect(try ImageUploadResponse(payload: response.payload).offset == 1000)
        _ = try device.send(.upload(ImageUploadRequest(offset: 1000, data: Self.image[1000..<3000])))
        device.model.disconnected()
        // The same file again from offset 0: the device answers where it stands.
        response = try device.send(.upload(ImageUploadRequest(length: Self.image.count, offset: 0, sha: sha, data: Self.image[0..<4])))
        #expect(try ImageUploadResponse(payload: response.payload).offset == 3000)
        // A reboot loses the upload: the same request starts over.
        device.reboot()
        response = try device.send(.upload(ImageUploadRequest(length: Self.image.count, offset: 0, sha: sha, data: Self.image[0..<4])))
        #expect(try ImageUploadResponse(payload: response.payload).offset == 4)
    }

    /// What `--sim-state` keeps (decisions 0041, 0048), as the sim-device-state fuzz target checks it.
    @Test("the upload in progress and slot 0 kept are restored by a new model and written back byte for byte")
    func keptStatesRoundTrip() throws {
        var device = DeviceUnderTest()
        let sha = Data(SHA256.hash(Self.image))
        _ = try device.send(.upload(ImageUploadRequest(length: Self.image.count, offset: 0, sha: sha, data: Self.image[0..<1000])))
        let running = device.model.runningState
        let persistent = device.model.persistentState
        #expect(!running.isEmpty)
        let later = MCUmgrDeviceModel()
        try later.restore(runningState: running)
        try later.restore(persistentState: persistent)
        #expect(later.runningState == running)
        #expect(later.persistentState == persistent)
        var cut = running
        cut.removeLast()
        #expect(throws: OTAError.self) { try later.restore(runningState: cut) }
    }

    @Test func errorsComeInTheFormOfTheRequestsVersion() throws {
        var device = DeviceUnderTest()
        #expect(try device.error(.setImageState(hash: Data(repeating: 9, count: 32), confirm: false)) == .group(1, code: 8))
        #expect(try device.error(.setImageState(hash: Data(repeating: 9, count: 32), confirm: false), version: 0) == .generic(.invalidValue, reason: nil))
        #expect(try device.error(.upload(ImageUploadRequest(length: 2 << 20, offset: 0, data: Data([1])))) == .group(1, code: 30))
        var unknown = SMPMessage(operation: .read, group: 9, command: 1, sequence: 0, payload: .map([]))
        unknown.header.version = 1
        _ = device.model.write(unknown.encoded, to: device.model.profile.smp, kind: .withoutResponse, peripheral: device.peripheral)
        let reply = try SMPMessage(decoding: Data(device.peripheral.takeNotifications().joined()))
        #expect(SMPDeviceError(payload: reply.payload) == .generic(.notSupported, reason: nil))
        var old = DeviceUnderTest(
            settings: {
                var s = MCUmgrDeviceModel.Settings(); s.answersParameters = false; return s
            }())
        #expect(try old.error(.parameters) == .generic(.notSupported, reason: nil))
    }

    @Test func responsesAreCutToTheCentralsWriteLength() throws {
        var device = DeviceUnderTest()
        try device.upload(Self.image)
        // A new connection whose central writes at most 20 bytes (ATT MTU 23).
        device.model.connected(device.peripheral)
        _ = try device.send(.readImageState, writeLength: 20)  // checks every notification ≤ 20 bytes
    }
}
