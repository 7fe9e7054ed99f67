import Foundation
import OTACore
import OTAProtocolNordicDFU
import Testing

@Suite struct ZipArchiveTests {
    // MARK: Reading

    @Test func readsStoredAndDeflatedEntries() throws {
        let text = Data(String(repeating: "firmware ", count: 500).utf8)
        let zip = makeZip([TestZipFile("a.txt", text), TestZipFile("b.txt", text, deflate: true)])
        let archive = try ZipArchive(data: zip, name: "t.zip")
        #expect(archive.entries.map(\.name) == ["a.txt", "b.txt"])
        #expect(archive.entries.map(\.method) == [.stored, .deflate])
        #expect(try archive.contents(named: "a.txt") == text)
        #expect(try archive.contents(named: "b.txt") == text)
        let deflated = try #require(archive.entry(named: "b.txt"))
        #expect(deflated.compressedSize < deflated.uncompressedSize)
    }

    @Test func readsTheDeflatedFixtureRepackedByPythonZipfile() throws {
        let archive = try ZipArchive(contentsOf: Fixture.url("app-deflated", "zip"))
        #expect(archive.entries.allSatisfy { $0.method == .deflate })
        let bin = try archive.contents(named: "app.bin")
        #expect(hex(SHA256.hash(bin)) == Fixture.appSHA256)
    }

    @Test func readsTheStoredEntriesNrfutilWrites() throws {
        let archive = try ZipArchive(contentsOf: Fixture.url("sd-bl-app", "zip"))
        #expect(Set(archive.entries.map(\.name)) == ["manifest.json", "app.bin", "app.dat", "sd_bl.bin", "sd_bl.dat"])
        #expect(archive.entries.allSatisfy { $0.method == .stored })
    }

    @Test func acceptsAnArchiveComment() throws {
        var end = TestZipEnd()
        end.comment = Data("built by a test".utf8)
        let archive = try ZipArchive(data: makeZip([TestZipFile("a.bin", "x")], end: end), name: "t.zip")
        #expect(try archive.contents(named: "a.bin") == Data("x".utf8))
    }

    @Test func slicedInputWithNonZeroStartIndex() throws {
        let zip = makeZip([TestZipFile("a.bin", "hello")])
        let padded = Data([1, 2, 3]) + zip
        let archive = try ZipArchive(data: padded[3...], name: "t.zip")
        #expect(try archive.contents(named: "a.bin") == Data("hello".utf8))
    }

    @Test func missingEntryIsNamed() throws {
        let archive = try ZipArchive(data: makeZip([TestZipFile("a.bin", "x")]), name: "t.zip")
        let message = expectInvalid { _ = try archive.contents(named: "b.bin") }
        #expect(message == "t.zip: b.bin is not in the archive")
    }

    // MARK: Refusals

    @Test(arguments: [
        ("../evil.bin", "path traversal"),
        ("a/../../evil.bin", "path traversal"),
        ("/etc/passwd", "absolute path"),
        ("C:evil.bin", "absolute path"),
        ("dir\\evil.bin", "backslash"),
        ("dir/", "directory entry"),
        ("dir/app.bin", "subdirectory"),
        ("bad\u{1}name", "control characters"),
    ])
    func refusesUnsafeNames(name: String, expected: String) {
        let zip = makeZip([TestZipFile(name, "payload")])
        let message = expectInvalid { _ = try ZipArchive(data: zip, name: "evil.zip") }
        #expect(message.hasPrefix("evil.zip: "))
        #expect(message.contains(expected), "\(message)")
    }

    @Test func refusesInvalidUTF8Names() {
        var zip = makeZip([TestZipFile("abc", "payload")])
        // Patch the central directory copy of the name to an invalid UTF-8 sequence.
        let central = zip.count - 22 - 3
        zip[central] = 0xC3
        zip[central + 1] = 0x28
        let message = expectInvalid { _ = try ZipArchive(data: zip, name: "t.zip") }
        #expect(message.contains("not valid UTF-8"))
    }

    @Test func refusesEncryptedEntries() {
        var file = TestZipFile("app.bin", "secret")
        file.flags = 0x0001
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([file]), name: "t.zip") }
        #expect(message == "t.zip: app.bin: entry is encrypted; DFU packages must not be")
    }

    @Test func refusesDuplicateNames() {
        let zip = makeZip([TestZipFile("app.bin", "one"), TestZipFile("app.bin", "two")])
        let message = expectInvalid { _ = try ZipArchive(data: zip, name: "t.zip") }
        #expect(message == "t.zip: app.bin: duplicate entry name")
    }

    @Test func refusesUnsupportedMethods() {
        var file = TestZipFile("app.bin", "x")
        file.methodOverride = 12  // bzip2
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([file]), name: "t.zip") }
        #expect(message == "t.zip: app.bin: unsupported compression method 12 (only stored and deflate)")
    }

    @Test func refusesOversizeDeclaredEntries() {
        var file = TestZipFile("app.bin", Data(repeating: 0xA5, count: 200_000), deflate: true)
        file.declaredSize = 64 << 20 + 1
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([file]), name: "big.zip") }
        #expect(message == "big.zip: app.bin: declares 67108865 bytes, more than the 64 MiB limit")
    }

    @Test func refusesOversizeTotals() {
        // Three entries of 60 MiB each (declared) with enough compressed bytes to pass the ratio check.
        let filler = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        let files = (1...3).map { index in
            var file = TestZipFile("part\(index).bin", filler)
            file.methodOverride = 8
            file.declaredSize = 60 << 20
            return file
        }
        let message = expectInvalid { _ = try ZipArchive(data: makeZip(files), name: "big.zip") }
        #expect(message == "big.zip: entries declare more than 128 MiB in total, refused")
    }

    @Test func refusesExtremeCompressionRatios() {
        // Deflate tops out near 1032:1, so a real bomb is made by chaining or lying; lie here.
        var file = TestZipFile("bomb.bin", Data(repeating: 0, count: 1000), deflate: true)
        file.declaredSize = 10_000_000
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([file]), name: "bomb.zip") }
        #expect(message.hasPrefix("bomb.zip: bomb.bin: compression ratio above 1000:1 (10000000 bytes from "))
        #expect(message.hasSuffix("refused as a possible zip bomb"))
    }

    @Test func stopsInflatingPastTheDeclaredSize() throws {
        // 4000 bytes that compress well, but the archive claims 1000.
        var file = TestZipFile("app.bin", Data(repeating: 0x42, count: 4000), deflate: true)
        file.declaredSize = 1000
        let archive = try ZipArchive(data: makeZip([file]), name: "lie.zip")
        let message = expectInvalid { _ = try archive.contents(named: "app.bin") }
        #expect(message == "lie.zip: app.bin: inflates past its declared size of 1000 bytes")
    }

    @Test func refusesEntriesShorterThanDeclared() throws {
        var file = TestZipFile("app.bin", Data(repeating: 0x42, count: 1000), deflate: true)
        file.declaredSize = 1500
        let archive = try ZipArchive(data: makeZip([file]), name: "lie.zip")
        let message = expectInvalid { _ = try archive.contents(named: "app.bin") }
        #expect(message == "lie.zip: app.bin: holds 1000 bytes but the archive declares 1500")
    }

    @Test func refusesCorruptDeflateData() throws {
        var file = TestZipFile("app.bin", Data(repeating: 0x42, count: 10))
        file.methodOverride = 8
        file.contents = Data([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        let archive = try ZipArchive(data: makeZip([file]), name: "bad.zip")
        let message = expectInvalid { _ = try archive.contents(named: "app.bin") }
        #expect(message.hasPrefix("bad.zip: app.bin: deflate data is corrupt"))
    }

    @Test func refusesTruncatedDeflateData() throws {
        let text = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 * $0) })
        let deflated = rawDeflate(text)
        var file = TestZipFile("app.bin", deflated.prefix(deflated.count / 2))
        file.methodOverride = 8
        file.declaredSize = UInt32(text.count)
        file.crcOverride = CRC32.checksum(text)
        let archive = try ZipArchive(data: makeZip([file]), name: "cut.zip")
        let message = expectInvalid { _ = try archive.contents(named: "app.bin") }
        #expect(message == "cut.zip: app.bin: deflate data is truncated")
    }

    @Test func refusesCRCMismatch() throws {
        var file = TestZipFile("app.bin", "hello")
        file.crcOverride = 0x1234_5678
        let archive = try ZipArchive(data: makeZip([file]), name: "t.zip")
        let message = expectInvalid { _ = try archive.contents(named: "app.bin") }
        #expect(message == "t.zip: app.bin: CRC-32 mismatch (archive says 0x12345678, contents give 0x3610A686)")
    }

    @Test func refusesLocalHeaderNameMismatch() {
        var file = TestZipFile("app.bin", "hello")
        file.localName = "evi.bin"
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([file]), name: "t.zip") }
        #expect(message == "t.zip: app.bin: local header names a different file than the central directory")
    }

    @Test func refusesLocalHeaderCRCMismatch() {
        var file = TestZipFile("app.bin", "hello")
        file.localCRCOverride = 0
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([file]), name: "t.zip") }
        #expect(message == "t.zip: app.bin: local header CRC or sizes differ from the central directory")
    }

    @Test func refusesStoredSizeMismatch() {
        var file = TestZipFile("app.bin", "hello")
        file.declaredSize = 4
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([file]), name: "t.zip") }
        #expect(message == "t.zip: app.bin: stored entry has compressed size 5 but size 4")
    }

    @Test func refusesMultiDiskArchives() {
        var end = TestZipEnd()
        end.diskNumber = 1
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([TestZipFile("a", "x")], end: end), name: "t.zip") }
        #expect(message == "t.zip: split (multi-disk) archives are not supported")
    }

    @Test func refusesZip64Archives() {
        var end = TestZipEnd()
        end.zip64Locator = true
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([TestZipFile("a", "x")], end: end), name: "t.zip") }
        #expect(message == "t.zip: ZIP64 archives are not supported")
    }

    @Test func refusesZip64Entries() {
        var file = TestZipFile("app.bin", "hello")
        var extra = Data()
        extra.appendLE(UInt16(0x0001))
        extra.appendLE(UInt16(8))
        extra.appendLE(UInt64(5))
        file.extra = extra
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([file]), name: "t.zip") }
        #expect(message == "t.zip: app.bin: ZIP64 entries are not supported")

        var marked = TestZipFile("app.bin", "hello")
        marked.declaredSize = 0xFFFF_FFFF
        let second = expectInvalid { _ = try ZipArchive(data: makeZip([marked]), name: "t.zip") }
        #expect(second == "t.zip: app.bin: ZIP64 entries are not supported")
    }

    @Test func refusesEmptyArchives() {
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([]), name: "t.zip") }
        #expect(message == "t.zip: the archive is empty")
    }

    @Test func refusesEntryCountMismatch() {
        var end = TestZipEnd()
        end.entryCountOverride = 1
        let zip = makeZip([TestZipFile("a", "x"), TestZipFile("b", "y")], end: end)
        let message = expectInvalid { _ = try ZipArchive(data: zip, name: "t.zip") }
        #expect(message.hasPrefix("t.zip: central directory size "))
        #expect(message.hasSuffix("does not match its 1 entries"))
    }

    @Test func refusesCentralDirectoryOutsideTheFile() {
        var end = TestZipEnd()
        end.directoryOffsetOverride = 0x00FF_FFFF
        let message = expectInvalid { _ = try ZipArchive(data: makeZip([TestZipFile("a", "x")], end: end), name: "t.zip") }
        #expect(message.hasPrefix("t.zip: truncated (central directory at bytes"))
    }

    @Test func refusesOverlappingEntries() {
        // Entry "a" stores, as its data, a complete local header for "b"; b's central entry points
        // inside a's data. Both headers are valid: only the overlap gives it away.
        let localB = makeZip([TestZipFile("b", "xyz")]).prefix(30 + 1 + 3)
        var zip = makeZip([TestZipFile("a", Data(localB)), TestZipFile("b", "xyz")])
        let secondCentral = zip.count - 22 - (46 + 1)
        let insideA = UInt32(30 + 1)
        for index in 0..<4 { zip[secondCentral + 42 + index] = UInt8(truncatingIfNeeded: insideA >> (8 * UInt32(index))) }
        let message = expectInvalid { _ = try ZipArchive(data: zip, name: "t.zip") }
        #expect(message == "t.zip: a and b overlap in the archive, refused as a possible zip bomb")
    }

    @Test func refusesTooManyEntries() {
        let files = (0..<65).map { TestZipFile("f\($0)", "x") }
        let message = expectInvalid { _ = try ZipArchive(data: makeZip(files), name: "t.zip") }
        #expect(message == "t.zip: 65 entries, more than the 64 a firmware package may hold")
    }

    @Test func notAZip() {
        #expect(expectInvalid { _ = try ZipArchive(data: Data(), name: "e.zip") } == "e.zip: not a zip archive (0 bytes is too short)")
        let message = expectInvalid { _ = try ZipArchive(data: Data(repeating: 0x41, count: 5000), name: "a.zip") }
        #expect(message == "a.zip: not a zip archive, or truncated (no end of central directory record)")
    }
}
