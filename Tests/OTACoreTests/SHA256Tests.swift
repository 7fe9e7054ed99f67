import Foundation
import Testing

@testable import OTACore

@Suite struct SHA256Tests {
    /// FIPS 180-2 / NIST CSHS example vectors.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        (
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
        ),
    ])
    func fipsVectors(message: String, expected: String) {
        #expect(hex(SHA256.hash(Data(message.utf8))) == expected)
    }

    @Test func oneMillionA() {
        let message = Data(repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(hex(SHA256.hash(message)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func oneMillionAFedInOddChunks() {
        var sha = SHA256()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 999)
        var fed = 0
        while fed < 1_000_000 {
            let count = min(chunk.count, 1_000_000 - fed)
            sha.update(chunk[0..<count])
            fed += count
        }
        #expect(hex(sha.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Digests computed with `sha256sum` over the bytes of ``pseudoRandomBytes(seed:count:)``
    /// (the same xorshift32 written in Python), at sizes around the 55/56/64-byte padding edges
    /// and up to 3 MB.
    @Test(arguments: [
        (UInt32(1), 1, "bb7208bc9b5d7c04f1236a82a0093a5e33f40423d5ba8d4266f7092c3ba43b62"),
        (2, 55, "6b91691da813ead15970079b7c6e121925cf88cc3b3df5ad9dbacfc05521c0af"),
        (3, 56, "f3f11702bba683584b101f145b304a19527bef0b2ddb52053a07f95b3515d0be"),
        (4, 63, "b7ab4349e834f77efc4374549aeaa1d38065c0f2a3cea29d7c63c7e4ac775b45"),
        (5, 64, "088b92d0041649e87edab4e86aeb4a9f19c69e6dd153b9c3bd9cd2252ba3ff88"),
        (6, 65, "6582f08ade97440ba3037aa6bd10670cc6c790d964fb06339176193dc2d7650a"),
        (7, 1000, "ad32c4dda2639b2d517de838d7596dc3cfe26b096ca2f2a85760ae672c098d0e"),
        (8, 100_003, "fff43b16e73ccca94265feddac583accf67398eb5ea18f974f848a44415046c4"),
        (9, 3_000_017, "7aff4e03d46c1502f183d010257f03bf01578eee5a72ea43dfb3205a16e793ba"),
    ])
    func crossCheckedWithSha256sum(seed: UInt32, count: Int, expected: String) {
        let bytes = pseudoRandomBytes(seed: seed, count: count)
        #expect(hex(SHA256.hash(bytes)) == expected)
    }

    @Test(arguments: [1, 3, 7, 55, 56, 63, 64, 65, 127, 129, 1000])
    func incrementalEqualsOneShot(step: Int) {
        let bytes = pseudoRandomBytes(seed: 42, count: 5_003)
        var sha = SHA256()
        var start = 0
        var size = step
        while start < bytes.count {
            let end = min(start + size, bytes.count)
            sha.update(bytes[start..<end])
            start = end
            size = size % 97 + step  // vary the split points
        }
        #expect(sha.finalize() == SHA256.hash(bytes))
    }

    @Test func rawBufferAndDataAgree() {
        let bytes = pseudoRandomBytes(seed: 7, count: 1000)
        let fromRaw = bytes.withUnsafeBytes { SHA256.hash($0) }
        #expect(fromRaw == SHA256.hash(Data(bytes)))
        #expect(hex(fromRaw) == "ad32c4dda2639b2d517de838d7596dc3cfe26b096ca2f2a85760ae672c098d0e")
    }

    @Test func nonContiguousDataProtocol() {
        // DispatchData with several regions exercises the multi-region path.
        let first = pseudoRandomBytes(seed: 11, count: 100)
        let second = pseudoRandomBytes(seed: 12, count: 37)
        var joined = DispatchData.empty
        first.withUnsafeBytes { joined.append($0) }
        second.withUnsafeBytes { joined.append($0) }
        #expect(SHA256.hash(joined) == SHA256.hash(first + second))
    }

    @Test func finalizeDoesNotConsumeTheHash() {
        var sha = SHA256()
        sha.update(Data("ab".utf8))
        _ = sha.finalize()
        sha.update(Data("c".utf8))
        #expect(hex(sha.digest) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sliceWithNonZeroStartIndex() {
        let whole = Data("xxabcyy".utf8)
        #expect(hex(SHA256.hash(whole[2..<5])) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    /// The compression with the CPU's SHA extensions (where this machine has them) and the
    /// portable one must leave the same state after any number of blocks from any state, at any
    /// alignment; the digests above were computed through whichever this machine has.
    @Test func bothCompressionsAgreeFromAnyStateAtAnyAlignment() {
        let bytes = pseudoRandomBytes(seed: 0xC0FF_EE11, count: 64 * 40 + 7)
        var state: [UInt32] = (0..<8).map { 0x0101_0101 &* UInt32($0 + 1) }
        for blocks in 1...40 {
            for start in [0, 1, 3, 7] where start + 64 * blocks <= bytes.count {
                var portable = state
                var dispatched = state
                bytes.withUnsafeBytes { raw in
                    let input = UnsafeRawBufferPointer(rebasing: raw[start..<(start + 64 * blocks)])
                    SHA256.compressPortably(&portable, blocks: input)
                    SHA256.compress(&dispatched, blocks: input)
                }
                #expect(dispatched == portable, "\(blocks) blocks at \(start)")
                state = portable
            }
        }
    }

    /// Where this machine's CPU reports the SHA extensions, they are used.
    @Test func theSHAExtensionsAreUsedWhereTheCPUHasThem() {
        #if arch(x86_64)
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        if cpu.contains(" sha_ni") && cpu.contains(" ssse3") && cpu.contains(" sse4_1") { #expect(SHA256.roundsAvailable) }
        #else
        #expect(!SHA256.roundsAvailable)
        #endif
    }
}

/// xorshift32 bytes (the low byte of each state), matching the Python generator used to compute
/// the expected digests.
private func pseudoRandomBytes(seed: UInt32, count: Int) -> [UInt8] {
    var x = seed
    var bytes = [UInt8](repeating: 0, count: count)
    for index in 0..<count {
        x ^= x << 13
        x ^= x >> 17
        x ^= x << 5
        bytes[index] = UInt8(truncatingIfNeeded: x)
    }
    return bytes
}

private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}
