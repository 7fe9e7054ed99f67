import CChecksum
import Foundation

/// SHA-256 (FIPS 180-4), for checking firmware hashes where CryptoKit is not available: with the
/// CPU's SHA extensions where it has them (x86-64, `CChecksum`; about 1.6 GB/s here), in portable
/// Swift otherwise (about 120 MB/s).
///
/// Nordic DFU init packets carry the SHA-256 of the image, and firmware manifests name images by
/// their digest. The hash can be computed in one call or incrementally:
///
/// ```swift
/// var sha = SHA256()
/// sha.update(firstChunk)
/// sha.update(secondChunk)
/// sha.finalize() // same as SHA256.hash(firstChunk + secondChunk)
/// ```
///
/// Input is consumed in 64-byte blocks read straight from the caller's buffers, so hashing
/// multi-megabyte images costs no per-byte allocation.
///
/// - Note: This is a checksum for integrity checks, not a constant-time implementation for use
///   with secrets.
public struct SHA256: Sendable {
    /// The size of a digest in bytes (32).
    public static let digestByteCount = 32
    /// The size of the blocks the compression function consumes, in bytes (64).
    public static let blockByteCount = 64

    /// The chaining state H0…H7.
    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a,
        0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    /// Bytes fed but not yet compressed: always fewer than 64.
    private var pending: [UInt8] = []
    /// The number of bytes fed so far.
    private var byteCount: UInt64 = 0

    /// Starts an empty hash.
    public init() {
        pending.reserveCapacity(Self.blockByteCount)
    }

    /// Feeds more bytes.
    public mutating func update(_ bytes: some DataProtocol) {
        for region in bytes.regions {
            region.withUnsafeBytes { raw in
                update(raw)
            }
        }
    }

    /// Feeds more bytes from a raw buffer.
    public mutating func update(_ raw: UnsafeRawBufferPointer) {
        guard !raw.isEmpty else { return }
        byteCount &+= UInt64(raw.count)
        var input = raw[...]

        // Complete a block started by an earlier call.
        if !pending.isEmpty {
            let take = min(Self.blockByteCount - pending.count, input.count)
            pending.append(contentsOf: input.prefix(take))
            input = input.dropFirst(take)
            guard pending.count == Self.blockByteCount else { return }
            pending.withUnsafeBytes { block in
                Self.compress(&state, blocks: block)
            }
            pending.removeAll(keepingCapacity: true)
        }

        // Whole blocks straight from the caller's buffer.
        let whole = input.count - input.count % Self.blockByteCount
        if whole > 0 {
            let blocks = UnsafeRawBufferPointer(rebasing: input.prefix(whole))
            Self.compress(&state, blocks: blocks)
            input = input.dropFirst(whole)
        }

        pending.append(contentsOf: input)
    }

    /// The digest of everything fed so far (32 bytes, in the usual big-endian order).
    ///
    /// The hash itself is not changed: more bytes can be fed afterwards, and the digest then
    /// covers all of them.
    public func finalize() -> [UInt8] {
        var copy = self
        let bitCount = byteCount &* 8
        // Padding: 0x80, zeros up to 56 mod 64, then the message length in bits (big-endian).
        var padding: [UInt8] = [0x80]
        let afterMarker = (pending.count + 1) % Self.blockByteCount
        let zeros = afterMarker <= 56 ? 56 - afterMarker : 120 - afterMarker
        padding.append(contentsOf: repeatElement(0, count: zeros))
        for shift in stride(from: 56, through: 0, by: -8) {
            padding.append(UInt8(truncatingIfNeeded: bitCount >> UInt64(shift)))
        }
        padding.withUnsafeBytes { copy.update($0) }
        precondition(copy.pending.isEmpty, "SHA-256 padding must end on a block boundary")

        var digest: [UInt8] = []
        digest.reserveCapacity(Self.digestByteCount)
        for word in copy.state {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    /// The digest of everything fed so far; the same as ``finalize()``.
    public var digest: [UInt8] { finalize() }

    /// The SHA-256 digest of `bytes`.
    public static func hash(_ bytes: some DataProtocol) -> [UInt8] {
        var sha = SHA256()
        sha.update(bytes)
        return sha.finalize()
    }

    /// The SHA-256 digest of the bytes in a raw buffer.
    public static func hash(_ raw: UnsafeRawBufferPointer) -> [UInt8] {
        var sha = SHA256()
        sha.update(raw)
        return sha.finalize()
    }

    // MARK: - Compression

    /// The round constants: the first 32 bits of the fractional parts of the cube roots of the
    /// first 64 primes.
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// Whether this CPU has the SHA extensions (asked once).
    static let roundsAvailable = ota_sha256_rounds_available() != 0

    /// Runs the compression function over whole 64-byte blocks: with the SHA extensions where
    /// the CPU has them, ``compressPortably(_:blocks:)`` otherwise.
    static func compress(_ state: inout [UInt32], blocks: UnsafeRawBufferPointer) {
        precondition(blocks.count % blockByteCount == 0, "SHA-256 compresses whole blocks only")
        guard roundsAvailable, let base = blocks.baseAddress else { return compressPortably(&state, blocks: blocks) }
        state.withUnsafeMutableBufferPointer { words in
            ota_sha256_rounds(words.baseAddress!, base.assumingMemoryBound(to: UInt8.self), blocks.count / blockByteCount)
        }
    }

    /// The compression function in Swift: where the CPU has no SHA extensions, and the tests'
    /// reference for the code that uses them.
    static func compressPortably(_ state: inout [UInt32], blocks: UnsafeRawBufferPointer) {
        precondition(blocks.count % blockByteCount == 0, "SHA-256 compresses whole blocks only")
        var h0 = state[0], h1 = state[1], h2 = state[2], h3 = state[3]
        var h4 = state[4], h5 = state[5], h6 = state[6], h7 = state[7]

        roundConstants.withUnsafeBufferPointer { k in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                var offset = 0
                while offset < blocks.count {
                    for t in 0..<16 {
                        w[t] = UInt32(bigEndian: blocks.loadUnaligned(fromByteOffset: offset + t * 4, as: UInt32.self))
                    }
                    for t in 16..<64 {
                        let w15 = w[t - 15], w2 = w[t - 2]
                        let s0 = w15.rotatedRight(7) ^ w15.rotatedRight(18) ^ (w15 >> 3)
                        let s1 = w2.rotatedRight(17) ^ w2.rotatedRight(19) ^ (w2 >> 10)
                        w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
                    }

                    var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                    for t in 0..<64 {
                        let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                        let choice = (e & f) ^ (~e & g)
                        let temp1 = h &+ s1 &+ choice &+ k[t] &+ w[t]
                        let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let temp2 = s0 &+ majority
                        h = g
                        g = f
                        f = e
                        e = d &+ temp1
                        d = c
                        c = b
                        b = a
                        a = temp1 &+ temp2
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d
                    h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                    offset += blockByteCount
                }
            }
        }
        state = [h0, h1, h2, h3, h4, h5, h6, h7]
    }
}

extension UInt32 {
    /// The value rotated right by `count` bits (0 < count < 32).
    @inline(__always)
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 {
        (self >> count) | (self << (32 &- count))
    }
}
