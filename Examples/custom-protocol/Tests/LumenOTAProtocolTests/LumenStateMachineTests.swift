import Foundation
import LumenOTAProtocol
import OTACore
import Testing

/// Lumen's exchange driven input by input, without a transport.
@Suite struct LumenStateMachineTests {
    private func failure(_ action: LumenUpdateStateMachine.Action) -> OTAError? {
        if case .fail(let error) = action { return error }
        return nil
    }

    private func startedMachine() -> LumenUpdateStateMachine {
        var machine = LumenUpdateStateMachine(size: 50_000, crc: 0xCAFE_F00D)
        _ = machine.start()
        return machine
    }

    private func machineAwaitingEnd() -> LumenUpdateStateMachine {
        var machine = startedMachine()
        _ = machine.receive(LumenReply(.begin, .ok).encoded)
        _ = machine.imageSent()
        return machine
    }

    @Test func happyPath() {
        var machine = LumenUpdateStateMachine(size: 50_000, crc: 0xCAFE_F00D)
        guard case .sendAndAwaitReply(.begin(size: 50_000)) = machine.start() else {
            Issue.record("expected begin")
            return
        }
        guard case .sendImage = machine.receive(Data([UInt8(ascii: "b"), 0])) else {
            Issue.record("expected the image to be sent")
            return
        }
        guard case .sendAndAwaitReply(.end(crc: 0xCAFE_F00D)) = machine.imageSent() else {
            Issue.record("expected end")
            return
        }
        guard case .finished = machine.receive(Data([UInt8(ascii: "e"), 0])) else {
            Issue.record("expected finished")
            return
        }
        #expect(machine.state == .done)
    }

    @Test func beginRefusedForSizeIsImageTooLarge() throws {
        var machine = startedMachine()
        let error = try #require(failure(machine.receive(LumenReply(.begin, .tooLarge).encoded)))
        #expect(error.code == .imageTooLarge)
        #expect(error.message == "Lumen bulb rejected begin: image too large for its slot")
        #expect(machine.state == .failed)
    }

    @Test(arguments: [
        (UInt8(1), OTAError.Code.verificationFailed, "Lumen bulb rejected end: CRC mismatch"),
        (UInt8(2), OTAError.Code.verificationFailed, "Lumen bulb rejected end: size mismatch"),
        (UInt8(0x2A), OTAError.Code.deviceRejected, "Lumen bulb rejected end: status 0x2a"),
    ])
    func endRefusedNamesTheStatus(status: UInt8, code: OTAError.Code, message: String) throws {
        var machine = machineAwaitingEnd()
        let error = try #require(failure(machine.receive(LumenReply(.end, statusByte: status).encoded)))
        #expect(error.code == code)
        #expect(error.message == message)
        #expect(machine.state == .failed)
    }

    /// Too short, too long, an unknown code, and the end reply while begin is awaited.
    @Test(arguments: [[], [0x62], [0x62, 0x00, 0x00], [0x78, 0x00], [0x65, 0x00]])
    func malformedBeginRepliesFail(bytes: [UInt8]) throws {
        var machine = startedMachine()
        let error = try #require(failure(machine.receive(Data(bytes))))
        #expect(error.code == .malformedResponse)
        #expect(error.message == "Lumen bulb sent a malformed begin reply (\(bytes.count) bytes)")
    }

    @Test func aReplyWhileSendingIsRefused() throws {
        var machine = startedMachine()
        _ = machine.receive(LumenReply(.begin, .ok).encoded)
        let error = try #require(failure(machine.receive(LumenReply(.end, .ok).encoded)))
        #expect(error.code == .malformedResponse)
        #expect(error.message == "Lumen bulb sent a reply while sending data (2 bytes)")
    }

    @Test func repliesRoundTrip() {
        #expect(LumenReply(.end, .badCRC).encoded == Data([UInt8(ascii: "e"), 1]))
        #expect(LumenReply(decoding: Data([UInt8(ascii: "b"), 3])) == LumenReply(.begin, .tooLarge))
        #expect(LumenReply(decoding: Data([UInt8(ascii: "e"), 0x2A]))?.status == nil)
        #expect(LumenReply(decoding: Data([UInt8(ascii: "B"), 0])) == nil)
    }
}
