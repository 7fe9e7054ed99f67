import Foundation
import OTACore
import Testing

@testable import OTAProtocolEspressif

@Suite struct EspressifStateMachineTests {
    static func ack(_ id: UInt16, _ status: UInt16 = 0) -> Data { EspressifCommandAck(commandID: id, status: status).encoded }
    static func sectorAck(_ sector: UInt16, _ status: EspressifSectorStatus = .success, expected: UInt16? = nil) -> Data {
        EspressifSectorAck(sector: sector, status: status, expected: expected ?? (status == .success ? sector + 1 : sector)).encoded
    }

    @Test func happyPathSectorBySector() throws {
        var machine = EspressifUpdateStateMachine(length: 10_000)
        #expect(machine.sectorCount == 3)
        guard case .sendCommand(.start(length: 10_000)) = machine.start() else { Issue.record("START first"); return }
        guard case .sendSector(let first, retry: nil) = machine.receiveCommandAck(Self.ack(1)) else { Issue.record("sector 0"); return }
        #expect(first.index == 0 && first.range == 0..<4096)
        guard case .sendSector(let second, nil) = machine.receiveSectorAck(Self.sectorAck(0)) else { Issue.record("sector 1"); return }
        #expect(second.range == 4096..<8192 && machine.acknowledgedBytes == 4096)
        guard case .sendSector(let third, nil) = machine.receiveSectorAck(Self.sectorAck(1)) else { Issue.record("sector 2"); return }
        #expect(third.index == 2 && third.range == 8192..<10_000)
        guard case .sendCommand(.stop) = machine.receiveSectorAck(Self.sectorAck(2)) else { Issue.record("STOP"); return }
        #expect(machine.state == .stopping && machine.acknowledgedBytes == 10_000)
        guard case .finished = machine.receiveCommandAck(Self.ack(2)) else { Issue.record("finished"); return }
        #expect(machine.state == .done)
    }

    @Test func aCRCErrorResendsTheSectorFromPacketZero() {
        var machine = EspressifUpdateStateMachine(length: 8192, sectorRetries: 2)
        _ = machine.start()
        _ = machine.receiveCommandAck(Self.ack(1))
        _ = machine.receiveSectorAck(Self.sectorAck(0))
        guard case .sendSector(let again, let retry?) = machine.receiveSectorAck(Self.sectorAck(1, .crcError)) else {
            Issue.record("resend"); return
        }
        #expect(again.index == 1 && again.range == 4096..<8192)
        #expect(retry == "device answered sector 1: CRC error, expects sector 1; sending sector 1 again from packet 0")
        #expect(machine.acknowledgedBytes == 4096 && machine.resentSectors == 1)
        _ = machine.receiveSectorAck(Self.sectorAck(1, .crcError))
        guard case .fail(let error) = machine.receiveSectorAck(Self.sectorAck(1, .crcError)) else { Issue.record("gives up"); return }
        #expect(error.code == .verificationFailed)
        #expect(error.message == "device answered sector 1: CRC error, expects sector 1, after sending it 3 times")
        #expect(machine.state == .failed)
    }

    @Test func aSectorIndexErrorResendsTheSectorTheDeviceNames() {
        var machine = EspressifUpdateStateMachine(length: 3 * 4096)
        _ = machine.start()
        _ = machine.receiveCommandAck(Self.ack(1))
        _ = machine.receiveSectorAck(Self.sectorAck(0))
        guard case .sendSector(let sector, _?) = machine.receiveSectorAck(Self.sectorAck(1, .sectorIndexError, expected: 0)) else {
            Issue.record("resend"); return
        }
        #expect(sector.index == 0)
        guard case .fail(let error) = machine.receiveSectorAck(Self.sectorAck(0, .sectorIndexError, expected: 2)) else {
            Issue.record("ahead"); return
        }
        #expect(error.code == .malformedResponse)
    }

    @Test func aSilenceResendsThenGivesUp() {
        var machine = EspressifUpdateStateMachine(length: 100, sectorRetries: 1)
        _ = machine.start()
        _ = machine.receiveCommandAck(Self.ack(1))
        guard case .sendSector(let sector, "no ACK for sector 0; sending sector 0 again from packet 0") = machine.sectorAckTimedOut() else {
            Issue.record("resend"); return
        }
        #expect(sector.range == 0..<100)
        guard case .fail(let error) = machine.sectorAckTimedOut() else { Issue.record("gives up"); return }
        #expect(error.code == .timeout)
    }

    @Test func aStaleSuccessIsSkippedAndARetryCounterResetsOnProgress() {
        var machine = EspressifUpdateStateMachine(length: 3 * 4096, sectorRetries: 1)
        _ = machine.start()
        _ = machine.receiveCommandAck(Self.ack(1))
        _ = machine.sectorAckTimedOut()
        guard case .awaitSectorAck = machine.receiveSectorAck(Self.sectorAck(7)) else { Issue.record("wait on"); return }
        guard case .sendSector(let next, nil) = machine.receiveSectorAck(Self.sectorAck(0)) else { Issue.record("next"); return }
        #expect(next.index == 1)
        guard case .sendSector = machine.sectorAckTimedOut() else { Issue.record("one retry per sector, again"); return }
    }

    @Test func aRejectedStartIsAnsweredWithStopThenStartOnce() {
        var machine = EspressifUpdateStateMachine(length: 5000)
        _ = machine.start()
        guard case .sendCommand(.stop) = machine.receiveCommandAck(Self.ack(1, 1)) else { Issue.record("STOP"); return }
        #expect(machine.state == .clearingSession)
        guard case .sendCommand(.start(length: 5000)) = machine.receiveCommandAck(Self.ack(2, 1)) else { Issue.record("START"); return }
        guard case .fail(let error) = machine.receiveCommandAck(Self.ack(1, 1)) else { Issue.record("fail"); return }
        #expect(error.code == .deviceRejected)
        #expect(error.message.hasPrefix("device rejected START for 5000 bytes, again after STOP"))
    }

    @Test func malformedAndOutOfTurnRepliesFail() {
        var machine = EspressifUpdateStateMachine(length: 5000)
        _ = machine.start()
        guard case .fail(let short) = machine.receiveCommandAck(Data([3, 0, 1, 0])) else { Issue.record("short"); return }
        #expect(short.code == .malformedResponse)
        var other = EspressifUpdateStateMachine(length: 5000)
        _ = other.start()
        guard case .fail(let wrong) = other.receiveCommandAck(Self.ack(2)) else { Issue.record("STOP's ACK to START"); return }
        #expect(wrong.code == .malformedResponse && wrong.message.contains("ACK of 0x0002"))
        var third = EspressifUpdateStateMachine(length: 5000)
        _ = third.start()
        _ = third.receiveCommandAck(Self.ack(1))
        var corrupted = [UInt8](Self.sectorAck(0))
        corrupted[2] ^= 1
        guard case .fail(let bad) = third.receiveSectorAck(Data(corrupted)) else { Issue.record("bad CRC"); return }
        #expect(bad.code == .malformedResponse)
    }

    @Test func aRejectedStopFails() {
        var machine = EspressifUpdateStateMachine(length: 10)
        _ = machine.start()
        _ = machine.receiveCommandAck(Self.ack(1))
        _ = machine.receiveSectorAck(Self.sectorAck(0))
        guard case .fail(let error) = machine.receiveCommandAck(Self.ack(2, 1)) else { Issue.record("fail"); return }
        #expect(error.code == .deviceRejected)
    }
}
