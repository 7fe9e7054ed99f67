import Foundation
import OTACore
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

/// The in-place read of an upload answer (`ImageUploadAnswer`) against the full decoding it
/// stands in for: wherever it reads an answer, the full path reads the same one; it reads every
/// answer of the common shape, and leaves every other frame to the full path.
@Suite struct ImageUploadAnswerTests {
    /// What the full path makes of `frame`: the sequence and the response, or nil where it fails.
    static func decodedInFull(_ frame: Data) -> (sequence: UInt8, response: ImageUploadResponse)? {
        guard let message = try? SMPMessage(decoding: frame) else { return nil }
        let request = MCUmgrRequest.upload(ImageUploadRequest(offset: 0, data: Data()))
        guard let payload = try? message.payload(answering: request, sequence: message.header.sequence),
            let response = try? ImageUploadResponse(payload: payload)
        else { return nil }
        return (message.header.sequence, response)
    }

    /// An unsigned integer's head and argument, in the shortest form or `width` bytes.
    static func unsigned(_ value: UInt64, major: UInt8 = 0, width: Int? = nil) -> [UInt8] {
        let width = width ?? (value < 24 ? 0 : value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8)
        let info: UInt8 =
            switch width {
            case 0: UInt8(value)
            case 1: 24
            case 2: 25
            case 4: 26
            default: 27
            }
        return [major << 5 | info] + (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    static func text(_ key: String) -> [UInt8] { unsigned(UInt64(key.utf8.count), major: 3) + Array(key.utf8) }

    static func frame(_ payload: [UInt8], sequence: UInt8, operation: UInt8 = 3, group: UInt16 = 1, command: UInt8 = 1) -> Data {
        let length = payload.count
        return Data(
            [0x08 | operation, 0, UInt8(length >> 8), UInt8(length & 0xFF), UInt8(group >> 8), UInt8(group & 0xFF), sequence, command] + payload)
    }

    /// A random answer of the common shape: `off` in any width, `rc` 0 and `match` or not, in any
    /// order, in a definite or an indefinite map.
    static func commonAnswer(_ random: inout SeededRandom) -> (frame: Data, sequence: UInt8, response: ImageUploadResponse) {
        let offset = [0, 1, 23, 24, 255, 256, 4096, 65_535, 65_536, 1 << 31, Int.max][Int(random.next() % 11)]
        let widths: [Int?] = [nil, nil, 1, 2, 4, 8]
        var width = widths[Int(random.next() % 6)]
        if let chosen = width, chosen < 8, UInt64(offset) >> (8 * UInt64(chosen)) != 0 { width = nil }
        var entries = [text("off") + unsigned(UInt64(offset), width: width)]
        if random.next() % 2 == 0 { entries.append(text("rc") + unsigned(0, width: random.next() % 3 == 0 ? 1 : nil)) }
        let match: Bool? = [nil, true, false][Int(random.next() % 3)]
        if let match { entries.append(text("match") + [match ? 0xF5 : 0xF4]) }
        entries.shuffle(using: &random)
        let indefinite = random.next() % 4 == 0
        let head: [UInt8] = indefinite ? [0xBF] : [0xA0 | UInt8(entries.count)]
        let payload: [UInt8] = head + entries.joined() + (indefinite ? [0xFF] : [])
        let sequence = UInt8(truncatingIfNeeded: random.next())
        return (frame(payload, sequence: sequence), sequence, ImageUploadResponse(offset: offset, match: match))
    }

    @Test func everyAnswerOfTheCommonShapeIsReadInPlaceAsTheFullPathReadsIt() {
        var random = SeededRandom(seed: 0x0FF5)
        for _ in 0..<2000 {
            let (frame, sequence, response) = Self.commonAnswer(&random)
            let answer = ImageUploadAnswer(frame: frame)
            #expect(answer == ImageUploadAnswer(sequence: sequence, response: response), "\(Array(frame))")
            let full = Self.decodedInFull(frame)
            #expect(full?.sequence == sequence && full?.response == response, "\(Array(frame))")
        }
    }

    @Test(
        arguments: [
            ("an error", [0xA2] + text("off") + [0x00] + text("rc") + [0x0A]),
            ("a negative rc", [0xA2] + text("off") + [0x00] + text("rc") + [0x20]),
            ("an SMP version 2 error", [0xA2] + text("off") + [0x00] + text("err") + [0xA2] + text("group") + [0x01] + text("rc") + [0x02]),
            ("a reason", [0xA2] + text("off") + [0x00] + text("rsn") + text("busy")),
            ("a duplicate off", [0xA2] + text("off") + [0x01] + text("off") + [0x02]),
            ("a negative off", [0xA1] + text("off") + [0x20]),
            ("an off that is text", [0xA1] + text("off") + text("1")),
            ("no off", [0xA1] + text("rc") + [0x00]),
            ("a match that is a number", [0xA2] + text("off") + [0x00] + text("match") + [0x01]),
            ("an off beyond Int", [0xA1] + text("off") + unsigned(UInt64(Int.max) + 1)),
            ("a map of 24 entries' head", [0xB8, 0x01] + text("off") + [0x00]),
            ("an indefinite key", [0xA1, 0x7F, 0x63] + Array("off".utf8) + [0xFF, 0x00]),
            ("an array", [0x81, 0x00]),
            ("trailing bytes", [0xA1] + text("off") + [0x00, 0x00]),
            ("a missing break", [0xBF] + text("off") + [0x00]),
            ("a truncated argument", [0xA1] + text("off") + [0x19, 0x01]),
            ("a count beyond the bytes", [0xA3] + text("off") + [0x00]),
        ] as [(String, [UInt8])])
    func everyOtherPayloadIsLeftToTheFullPath(_ what: String, payload: [UInt8]) {
        #expect(ImageUploadAnswer(frame: Self.frame(payload, sequence: 7)) == nil, "\(what)")
    }

    @Test func aFrameOfAnotherCommandOrOperationOrLengthIsLeftToTheFullPath() {
        let payload = [0xA1] + Self.text("off") + [0x00]
        #expect(ImageUploadAnswer(frame: Self.frame(payload, sequence: 1)) != nil)
        #expect(ImageUploadAnswer(frame: Self.frame(payload, sequence: 1, operation: 2)) == nil)
        #expect(ImageUploadAnswer(frame: Self.frame(payload, sequence: 1, operation: 1)) == nil)
        #expect(ImageUploadAnswer(frame: Self.frame(payload, sequence: 1, group: 0)) == nil)
        #expect(ImageUploadAnswer(frame: Self.frame(payload, sequence: 1, command: 0)) == nil)
        #expect(ImageUploadAnswer(frame: Self.frame(payload, sequence: 1) + [0x00]) == nil)
        #expect(ImageUploadAnswer(frame: Self.frame(payload, sequence: 1).dropLast()) == nil)
        // A slice of a larger buffer, as a reassembler may hand out.
        let inside = Data([0xEE, 0xEE]) + Self.frame(payload, sequence: 9)
        #expect(ImageUploadAnswer(frame: inside.dropFirst(2))?.sequence == 9)
    }

    /// Mutated answers (bytes flipped, dropped, inserted): where the in-place read takes one, the
    /// full path reads the same answer from it.
    @Test func whereverTheInPlaceReadTakesAMutatedFrameTheFullPathAgrees() {
        var random = SeededRandom(seed: 0xBAD5)
        var taken = 0
        var left = 0
        for _ in 0..<20_000 {
            var bytes = Array(Self.commonAnswer(&random).frame)
            for _ in 0...(random.next() % 3) {
                let index = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 4 {
                case 0: bytes[index] ^= UInt8(1 << (random.next() % 8))
                case 1: bytes[index] = UInt8(truncatingIfNeeded: random.next())
                case 2: if bytes.count > 9 { bytes.remove(at: index) }
                default: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: index)
                }
            }
            let frame = Data(bytes)
            guard let answer = ImageUploadAnswer(frame: frame) else {
                left += 1
                continue
            }
            taken += 1
            let full = Self.decodedInFull(frame)
            #expect(full?.sequence == answer.sequence && full?.response == answer.response, "\(bytes)")
        }
        // Both sides of the comparison were exercised.
        #expect(taken > 1000 && left > 1000, "taken \(taken), left \(left)")
    }
}
