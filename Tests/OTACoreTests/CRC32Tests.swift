import Foundation
import OTACore
import Testing

@Suite struct CRC32Tests {
    @Test(arguments: [
        ([UInt8](), UInt32(0x0000_0000)),
        (Array("hello world".utf8), UInt32(0x0D4A_1185)),
        ([0x00], UInt32(0xD202_EF8D)),
        ([0x01, 0x02, 0x03], UInt32(0x55BC_801D)),
        (Array("123456789".utf8), UInt32(0xCBF4_3926)),
    ])
    func seedVectors(input: [UInt8], expected: UInt32) {
        #expect(CRC32.checksum(Data(input)) == expected)
    }

    @Test func incrementalEqualsWhole() {
        let bytes = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var crc = CRC32()
        for start in stride(from: 0, to: bytes.count, by: 977) {
            crc.update(bytes[start..<min(start + 977, bytes.count)])
        }
        #expect(crc.value == CRC32.checksum(bytes))
    }

    @Test func continuesFromAKnownPrefix() {
        let prefix = Data("hello ".utf8)
        let suffix = Data("world".utf8)
        var crc = CRC32(continuingFrom: CRC32.checksum(prefix))
        crc.update(suffix)
        #expect(crc.value == 0x0D4A_1185)
    }

    @Test func sliceWithNonZeroStartIndex() {
        let whole = Data("xxhello worldyy".utf8)
        #expect(CRC32.checksum(whole[2..<13]) == 0x0D4A_1185)
    }
}
