import Foundation
import OTACore
import OTAProtocolGeneric
import Testing

@Suite struct GenericWireTests {
    @Test func startIsOpCodeThenSizeAndCRCLittleEndian() {
        let start = GenericCommand.start(size: 200_000, crc: 0x0D4A_1185)
        #expect([UInt8](start.encoded) == [0x01, 0x40, 0x0D, 0x03, 0x00, 0x85, 0x11, 0x4A, 0x0D])
        #expect(GenericCommand(decoding: start.encoded) == start)
    }

    @Test func commitAndAbort() {
        #expect([UInt8](GenericCommand.commit(crc: 0xD202_EF8D).encoded) == [0x02, 0x8D, 0xEF, 0x02, 0xD2])
        #expect([UInt8](GenericCommand.abort.encoded) == [0x03])
        #expect(GenericCommand(decoding: Data([0x03])) == .abort)
    }

    @Test(arguments: [[], [0x01, 0, 0, 0, 0, 0, 0, 0], [0x02, 1, 2, 3], [0x04], [0x81, 0x00]])
    func shortOrUnknownCommandsDoNotDecode(bytes: [UInt8]) {
        #expect(GenericCommand(decoding: Data(bytes)) == nil)
    }

    @Test func replies() {
        #expect(GenericReply(decoding: Data([0x81, 0x00])) == .start(.ok))
        #expect(GenericReply(decoding: Data([0x82, 0x02])) == .commit(.sizeMismatch))
        #expect(GenericReply.commit(.flashError).encoded == Data([0x82, 0xFF]))
        #expect(GenericReply(decoding: Data([0x81])) == nil)
        #expect(GenericReply(decoding: Data([0x81, 0x00, 0x00])) == nil)
        #expect(GenericReply(decoding: Data([0x83, 0x00])) == nil)
    }

    @Test func statusesDescribeThemselves() {
        #expect(GenericStatus.flashError.description == "status 0xFF, flash error")
        #expect(GenericStatus.crcMismatch.description == "status 0x01, CRC mismatch")
        #expect(GenericStatus(rawValue: 0x17).description == "status 0x17, unknown status")
    }
}
