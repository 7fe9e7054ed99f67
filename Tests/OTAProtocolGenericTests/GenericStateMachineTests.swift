import Foundation
import OTACore
import OTAProtocolGeneric
import Testing

@Suite struct GenericStateMachineTests {
    private func startedMachine() -> GenericUpdateStateMachine {
        var machine = GenericUpdateStateMachine(size: 1000, crc: 0xCAFE_F00D)
        _ = machine.start()
        return machine
    }

    @Test func happyPath() {
        var machine = GenericUpdateStateMachine(size: 1000, crc: 0xCAFE_F00D)
        guard case .sendAndAwaitReply(.start(1000, 0xCAFE_F00D)) = machine.start() else {
            Issue.record("expected START")
            return
        }
        guard case .streamImage = machine.receive(Data([0x81, 0x00])) else {
            Issue.record("expected streaming")
            return
        }
        guard case .sendAndAwaitReply(.commit(0xCAFE_F00D)) = machine.streamFinished() else {
            Issue.record("expected COMMIT")
            return
        }
        guard case .finished = machine.receive(Data([0x82, 0x00])) else {
            Issue.record("expected finished")
            return
        }
        #expect(machine.state == .done)
    }

    private func failure(_ action: GenericUpdateStateMachine.Action) -> OTAError? {
        if case .fail(let error) = action { return error }
        return nil
    }

    @Test func rejectedStartNamesTheStatus() throws {
        var machine = startedMachine()
        let error = try #require(failure(machine.receive(Data([0x81, 0xFF]))))
        #expect(error.code == .deviceRejected)
        #expect(error.message.hasPrefix("device rejected START: status 0xFF, flash error"))
        #expect(machine.state == .failed)
    }

    @Test(arguments: [
        (UInt8(0x01), OTAError.Code.verificationFailed, "status 0x01, CRC mismatch"),

        (UInt8(0xFF), OTAError.Code.deviceRejected, "status 0xFF, flash error"),
        (UInt8(0x42), OTAError.Code.deviceRejected, "status 0x42, unknown status"),
    ])
    func rejectedCommit(status: UInt8, code: OTAError.Code, text: String) throws {
        var machine = startedMachine()
        _ = machine.receive(Data([0x81, 0x00]))
        _ = machine.streamFinished()
        let error = try #require(failure(machine.receive(Data([0x82, status]))))
        #expect(error.code == code)
        #expect(error.message.contains("device rejected COMMIT: \(text)"))
    }

    /// A size mismatch is bytes lost on the link, not a refusal: a transport failure, which the
    /// engine answers by starting over.
    @Test func aSizeMismatchAtCommitIsALostLink() throws {
        var machine = startedMachine()
        _ = machine.receive(Data([0x81, 0x00]))
        _ = machine.streamFinished()
        let error = try #require(failure(machine.receive(Data([0x82, 0x02]))))
        #expect(error.code == .transport)
        #expect(
            error.message
                == "device answered COMMIT with status 0x02, size mismatch: it received a different number of bytes than START announced, so bytes were lost on the link"
        )
    }

    @Test(arguments: [[], [0x81], [0x81, 0x00, 0x00], [0x99, 0x00], [0x82, 0x00]])
    func malformedOrOutOfTurnRepliesFail(bytes: [UInt8]) throws {
        var machine = startedMachine()
        let error = try #require(failure(machine.receive(Data(bytes))))
        #expect(error.code == .malformedResponse)
    }
}
