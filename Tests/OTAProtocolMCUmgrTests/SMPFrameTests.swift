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

    /// The in-place header read of `Data` (a slice too) gives what the byte-collection one gives,
    /// for every first byte and a header that differs in each field; fewer than 8 bytes is `nil`.
    @Test func headerReadFromDataMatchesTheCollectionRead() {
        let buffer = Data([0xEE, 0xEE] + (0..<8).map { UInt8(truncatingIfNeeded: $0 * 37 + 1) } + [0x99])
        for first in 0...255 {
            var bytes = buffer
            bytes[2] = UInt8(first)
            let slice = bytes[2...]
            #expect(SMPHeader(slice) == SMPHeader(Array(slice)))
            #expect(SMPHeader(slice)?.encoded == SMPHeader(Array(slice))?.encoded)
        }
        #expect(SMPHeader(Data([1, 2, 3, 4, 5, 6, 7])) == nil)
        #expect(SMPHeader(buffer[2...])?.sequence == buffer[8])
    }

    /// An upload request's frame: the header's length is the payload's, the payload decodes
    /// back to the request, and the image bytes are the frame's tail.
    @Test func uploadFrameCarriesItsLengthAndDataLast() throws {
        let data = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let request = ImageUploadRequest(length: 90_000, offset: 0, sha: Data(repeating: 0x5A, count: 32), data: data)
        let frame = MCUmgrRequest.upload(request).encoded(sequence: 9)
        let header = try #require(SMPHeader(frame))
        #expect(Int(header.payloadLength) == frame.count - SMPHeader.length)
        #expect(Int(header.payloadLength) == request.payload.encodedLength)
        #expect(frame.suffix(data.count) == data)
        #expect(try SMPMessage(decoding: frame).payload == request.payload)
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

    /// `isWholeMessage` (what the channel takes without the reassembler's array) holds exactly
    /// when `append` would return the fragment alone, unchanged, and leave nothing buffered: for
    /// whole messages, slices of them, one byte short or long, two messages at once, headers
    /// declaring more than the limit, and after part of a message is buffered. The sequence read
    /// alone is the header's.
    @Test func aWholeMessageIsExactlyWhatAppendReturnsAlone() throws {
        let answer = SMPMessage(operation: .writeResponse, group: 1, command: 1, sequence: 42, payload: .textMap(["off": .unsigned(4096)])).encoded
        let padded = Data([0xEE]) + answer + Data([0xEE])
        let candidates: [Data] = [
            answer, padded.dropFirst().dropLast(), answer.dropLast(), answer + Data([0]), answer + answer, Data(answer.prefix(8)),
            Data(answer.prefix(7)), Data(), SMPHeader(operation: .readResponse, payloadLength: 2000, group: 1, sequence: 0, command: 0).encoded,
        ]
        for (index, fragment) in candidates.enumerated() {
            for buffered in [false, true] {
                var reassembler = SMPReassembler(maximumPayload: 100)
                if buffered { _ = try reassembler.append(Data(answer.prefix(3))) }
                let whole = reassembler.isWholeMessage(fragment)
                let appended = try? reassembler.append(fragment)
                let alone = appended.map { $0.count == 1 && $0[0] == fragment && reassembler.isIdle } ?? false
                #expect(whole == (alone && !buffered), "candidate \(index), buffered \(buffered)")
            }
            #expect(SMPHeader.sequence(of: fragment) == SMPHeader(fragment)?.sequence, "candidate \(index)")
            #expect(SMPHeader.payloadLength(of: fragment) == SMPHeader(fragment).map { Int($0.payloadLength) }, "candidate \(index)")
        }
        #expect(SMPReassembler().isWholeMessage(answer))
    }

    @Test func refusesADeclaredLengthAboveTheLimitBeforeBuffering() {
        var reassembler = SMPReassembler(maximumPayload: 100)
        let header = SMPHeader(operation: .readResponse, payloadLength: 2000, group: 1, sequence: 0, command: 0).encoded
        #expect(throws: SMPFrameError.tooLong(declared: 2000, limit: 100)) { try reassembler.append(header) }
        #expect(reassembler.isIdle)
    }
}
