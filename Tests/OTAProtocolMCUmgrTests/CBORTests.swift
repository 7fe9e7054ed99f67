import Foundation
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

@Suite struct CBORTests {
    let decoder = CBORDecoder()

    // Examples from RFC 8949 appendix A.
    @Test(arguments: [
        (CBOR.unsigned(0), "00"), (.unsigned(23), "17"), (.unsigned(24), "1818"), (.unsigned(1000), "1903e8"),
        (.unsigned(1_000_000), "1a000f4240"), (.unsigned(18_446_744_073_709_551_615), "1bffffffffffffffff"),
        (.negative(0), "20"), (.negative(999), "3903e7"), (.bool(false), "f4"), (.bool(true), "f5"), (.null, "f6"),
        (.bytes(Data([1, 2, 3, 4])), "4401020304"), (.text("IETF"), "6449455446"), (.text("\u{00fc}"), "62c3bc"),
        (.array([.unsigned(1), .array([.unsigned(2), .unsigned(3)])]), "8201820203"),
        (.textMap(["a": .unsigned(1), "b": .array([.unsigned(2), .unsigned(3)])]), "a26161016162820203"),
    ])
    func encodesAndDecodesTheRFCExamples(item: CBOR, hex: String) throws {
        #expect(item.encoded == Data(hexString: hex))
        #expect(item.encodedLength == Data(hexString: hex).count)
        #expect(try decoder.decode(Data(hexString: hex)) == item)
    }

    /// Every head length at its boundaries: the encoding is the major type and the value's
    /// big-endian bytes in the shortest form, and ``CBOR/encodedLength`` matches it.
    @Test(arguments: [
        (UInt64(23), "17"), (24, "1818"), (255, "18ff"), (256, "190100"), (65535, "19ffff"), (65536, "1a00010000"),
        (4_294_967_295, "1affffffff"), (4_294_967_296, "1b0000000100000000"),
    ])
    func headsAtEveryLengthBoundary(value: UInt64, hex: String) {
        #expect(CBOR.unsigned(value).encoded == Data(hexString: hex))
        #expect(CBOR.unsigned(value).encodedLength == hex.count / 2)
        // The same head on a byte string's length, then its bytes.
        if value <= 65536 {
            let bytes = CBOR.bytes(Data(repeating: 0xA5, count: Int(value)))
            var expected = Data(hexString: hex)
            expected[expected.startIndex] |= 0x40
            #expect(bytes.encoded == expected + Data(repeating: 0xA5, count: Int(value)))
            #expect(bytes.encodedLength == expected.count + Int(value))
        }
    }

    @Test func acceptsIndefiniteLengthsAsZephyrWritesThem() throws {
        // {_ "rc": 0} and [_ 1, [2, 3]] and (_ h'0102', h'03').
        #expect(try decoder.decode(Data(hexString: "bf627263 00ff")) == .textMap(["rc": .unsigned(0)]))
        #expect(try decoder.decode(Data(hexString: "9f018202 03ff")) == .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)])]))
        #expect(try decoder.decode(Data(hexString: "5f42010241 03ff")) == .bytes(Data([1, 2, 3])))
    }

    @Test func decodesFloats() throws {
        #expect(try decoder.decode(Data(hexString: "f93c00")) == .float(1.0))
        #expect(try decoder.decode(Data(hexString: "f9c400")) == .float(-4.0))
        #expect(try decoder.decode(Data(hexString: "fa47c35000")) == .float(100000.0))
        #expect(try decoder.decode(Data(hexString: "fb3ff199999999999a")) == .float(1.1))
    }

    @Test(arguments: [
        ("", "input ends inside an item"),
        ("19 03", "input ends inside an item"),
        ("5a ffffffff 00", "more than the 1 bytes left"),
        ("9b 00000000ffffffff", "more than the 0 bytes left"),
        ("1c", "reserved additional information 28"),
        ("ff", "break outside"),
        ("82 01 ff", "break inside a definite-length item"),
        ("62 c3 28", "not UTF-8"),
        ("00 00", "1 bytes after the item"),
        ("5f 61 00 ff", "other than definite chunks"),
        ("1f", "integer cannot be indefinite"),
        ("f8 10", "simple value 16 in two bytes"),
        ("f0", "unassigned simple value 16"),
    ])
    func refusesMalformedInputWithTheReason(hex: String, reason: String) {
        #expect {
            try decoder.decode(Data(hexString: hex))
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test func limitsDepthAndItemCount() throws {
        let deep = Data(repeating: 0x81, count: 17) + Data([0x00])
        #expect(throws: CBORError.self) { try decoder.decode(deep) }
        #expect((try? CBORDecoder(maximumDepth: 17).decode(deep)) != nil)
        let many = Data([0x9F]) + Data(repeating: 0x00, count: 5000) + Data([0xFF])
        #expect { try decoder.decode(many) } throws: { "\($0)".contains("more than 4096 items") }
    }

    @Test func readsMapsByTextKey() throws {
        let item = try decoder.decode(CBOR.textMap(["off": .unsigned(512), "match": .bool(true), "rc": .integer(-3)]).encoded)
        #expect(item["off"]?.unsignedValue == 512)
        #expect(item["match"]?.boolValue == true)
        #expect(item["rc"]?.intValue == -3)
        #expect(item["missing"] == nil)
        #expect(CBOR.unsigned(1)["off"] == nil)
    }

    @Test func randomItemsRoundTrip() throws {
        var random = SeededRandom(seed: 12)
        for _ in 0..<500 {
            let item = Self.randomItem(depth: 0, random: &random)
            #expect(try decoder.decode(item.encoded) == item)
            #expect(item.encodedLength == item.encoded.count)
        }
    }

    @Test func randomBytesNeverCrashTheDecoder() {
        var random = SeededRandom(seed: 99)
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...24, using: &random)
            let bytes = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) })
            _ = try? decoder.decode(bytes)
        }
    }

    static func randomItem(depth: Int, random: inout SeededRandom) -> CBOR {
        switch Int.random(in: 0...(depth < 3 ? 8 : 5), using: &random) {
        case 0: return .unsigned(UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0...63, using: &random))
        case 1: return .negative(UInt64.random(in: 0...70_000, using: &random))
        case 2: return .bytes(Data((0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case 3: return .text(String(repeating: "é", count: Int.random(in: 0...30, using: &random)))
        case 4: return .bool(Bool.random(using: &random))
        case 5: return .null
        case 6: return .array((0..<Int.random(in: 0...5, using: &random)).map { _ in randomItem(depth: depth + 1, random: &random) })
        case 7: return .tagged(UInt64.random(in: 0...300, using: &random), randomItem(depth: depth + 1, random: &random))
        default:
            return .map(
                (0..<Int.random(in: 0...5, using: &random)).map { index in
                    CBOR.Entry(.text("k\(index)"), randomItem(depth: depth + 1, random: &random))
                })
        }
    }
}

extension Data {
    /// Bytes from hexadecimal digits, spaces ignored (test input only).
    init(hexString: String) {
        let digits = Array(hexString.filter { !$0.isWhitespace })
        self.init(stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! })
    }
}
