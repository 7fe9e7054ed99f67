import Foundation
import Testing

@testable import OTACore

@Suite struct HexTests {
    @Test func numbersArePrefixedUpperCaseAndPadded() {
        #expect(Hex.number(0x1F) == "0x1F")
        #expect(Hex.number(0 as UInt8) == "0x0")
        #expect(Hex.number(0x0E2E_4B96 as UInt32, digits: 8) == "0x0E2E4B96")
        #expect(Hex.number(0xFFFF_FFFF as UInt32, digits: 8) == "0xFFFFFFFF")
        #expect(Hex.number(0x1234_5678_9 as Int, digits: 4) == "0x123456789")
        #expect(Hex.number(0x5 as UInt8, digits: 2) == "0x05")
    }

    @Test func digitsWithoutAPrefix() {
        #expect(Hex.digits(0xAB as UInt8, digits: 4) == "00AB")
        #expect(Hex.digits(0xAB as UInt8, uppercase: false) == "ab")
    }

    @Test func bytesTwoDigitsEach() {
        #expect(Hex.bytes([0xE4, 0x06, 0x00, 0xFF]) == "e40600ff")
        #expect(Hex.bytes([0xE4, 0x06], uppercase: true, separator: " ") == "E4 06")
        #expect(Hex.bytes([UInt8]()) == "")
        let all = Hex.bytes((0...255).map { UInt8($0) })
        #expect(all.count == 512)
        #expect(all.hasPrefix("000102") && all.hasSuffix("fdfeff"))
    }

    @Test func byteListsForMalformedReplies() {
        #expect(Hex.byteList([0x81, 0x00]) == "0x81 0x00")
        #expect(Hex.byteList([UInt8]()) == "(empty)")
    }

    @Test func decodingTakesPairsOfASCIIDigitsOnly() {
        #expect(Hex.decode("e406FF") == [0xE4, 0x06, 0xFF])
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("e40") == nil)
        #expect(Hex.decode("0g") == nil)
        // Fullwidth digits are hex digits to Character.isHexDigit, not here.
        #expect(Hex.decode("\u{FF11}\u{FF12}") == nil)
        #expect(Hex.digitValue(UInt8(ascii: "F")) == 15)
        #expect(Hex.digitValue(UInt8(ascii: "/")) == nil && Hex.digitValue(UInt8(ascii: ":")) == nil && Hex.digitValue(UInt8(ascii: "G")) == nil)
    }

    @Test func aManifestsHexMayStartWith0xAndIsDecodedAlike() {
        #expect(ManifestReader.Node.asciiHexBytes("0xE406") == Data([0xE4, 0x06]))
        #expect(ManifestReader.Node.asciiHexBytes("0Xe406") == Data([0xE4, 0x06]))
        #expect(ManifestReader.Node.asciiHexBytes("e406") == Data([0xE4, 0x06]))
        #expect(ManifestReader.Node.asciiHexBytes("0x") == Data())
        #expect(ManifestReader.Node.asciiHexBytes("0xe40") == nil)
        #expect(ManifestReader.Node.asciiHexBytes("0x\u{FF11}\u{FF12}") == nil)
    }
}
