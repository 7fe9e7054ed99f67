import Foundation
import Testing

@testable import OTAProtocolMCUmgr

@Suite struct SMPFrameTests {
    @Test func headerIsBigEndianWithVersionAndOperationInTheFirstByte() throws {
        let message = SMPMessage(operation: .write, group: 1, command: 1, sequence: 7, payload: .textMap(["off": .unsigned(0)]))
        let bytes = message.encoded
        #expect(bytes.prefix(8) == Data([0x0A, 0x00, 0x00, 0x06, 0x00, 0x01, 0x07, 0x01]))
        let decoded = try SMPMessage(decoding: bytes)
        #expect(decoded.header.operation == .write)
        #expect(decoded.header.version == 1)
        #expect(decoded.header.payloadLength == 6)
        #expect(decoded.payload["off"]?.unsignedValue == 0)
        #expect(SMPHeader.Operation.write.response == .writeResponse)
        #expect(SMPHeader.Operation.read.response == .readResponse)
    }

    @Test func refusesFramesWhoseLengthDisagrees() {
        let bytes = SMPMessage(operation: .read, group: 0, command: 6, sequence: 1, payload: .map([])).encoded
        #expect(throws: SMPFrameError.truncatedHeader(5)) { try SMPMessage(decoding: bytes.prefix(5)) }
        #expect(throws: SMPFrameError.lengthMismatch(declared: 1, actual: 2)) { try SMPMessage(decoding: bytes + Data([0])) }
    }

    @Test func reassemblesAcrossFragmentsAndSplitsConcatenatedMessages() throws {
        let first = SMPMessage(operation: .writeResponse, group: 1, command: 1, sequence: 1, payload: .textMap(["off": .unsigned(4096)])).encoded
        let second = SMPMessage(operation: .writeResponse, group: 1, command: 1, sequence: 2, payload: .textMap(["off": .unsigned(8192)])).encoded
        let stream = first + second
        for cut in 1..<stream.count {
            var reassembler = SMPReassembler()
            var frames = try reassembler.append(Data(stream.prefix(cut)))
            frames += try reassembler.append(Data(stream.dropFirst(cut)))
            #expect(frames == [first, second], "cut at \(cut)")
            #expect(reassembler.isIdle)
        }
    }

    @Test func refusesADeclaredLengthAboveTheLimitBeforeBuffering() {
        var reassembler = SMPReassembler(maximumPayload: 100)
        let header = SMPHeader(operation: .readResponse, payloadLength: 2000, group: 1, sequence: 0, command: 0).encoded
        #expect(throws: SMPFrameError.tooLong(declared: 2000, limit: 100)) { try reassembler.append(header) }
        #expect(reassembler.isIdle)
    }
}
