import Foundation
import Testing

@testable import OTACore

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

    /// The folded path (x86-64 with PCLMULQDQ) and zlib's must agree with the polynomial's
    /// definition at every length around the folding's thresholds (64 bytes, 16-byte blocks, the
    /// four-lane loop), at every misalignment, and from any starting value.
    @Test func everyLengthAndAlignmentMatchesTheBitwiseDefinition() {
        let bytes = Data((0..<700).map { UInt8(truncatingIfNeeded: ($0 &* 0x9E37) >> 3 ^ $0) })
        for length in 0...600 {
            for start in [0, 1, 7, 15, 16, 33] {
                let piece = bytes[start..<(start + length)]
                let initial = UInt32(truncatingIfNeeded: length &* 0x0101_0101 ^ start)
                var crc = CRC32(continuingFrom: initial)
                crc.update(piece)
                #expect(crc.value == Self.bitwise(piece, from: initial), "length \(length) at \(start)")
            }
        }
    }

    /// Large buffers go through the four-lane loop many times.
    @Test func largeBuffersMatchTheBitwiseDefinition() {
        for length in [4096, 65_536 + 48, 1_000_003] {
            let bytes = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
            #expect(CRC32.checksum(bytes) == Self.bitwise(bytes, from: 0), "length \(length)")
        }
    }

    /// Where this machine folds, the tests above went through the folding; where it does not
    /// (another architecture), through zlib alone, and this says which.
    @Test func foldingIsUsedWhereTheCPUHasIt() {
        #if arch(x86_64)
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        if cpu.contains(" pclmulqdq") && cpu.contains(" sse4_1") { #expect(CRC32.foldingAvailable) }
        #else
        #expect(!CRC32.foldingAvailable)
        #endif
    }

    /// CRC-32 one bit at a time, from its definition (zlib's convention: the register starts
    /// and ends inverted).
    static func bitwise(_ bytes: Data, from initial: UInt32) -> UInt32 {
        var register = ~initial
        for byte in bytes {
            register ^= UInt32(byte)
            for _ in 0..<8 { register = register & 1 == 1 ? (register >> 1) ^ 0xEDB8_8320 : register >> 1 }
        }
        return ~register
    }
}
