import Foundation
import OTACore
import OTAProtocolNordicDFU
import Testing

/// Issue 14 row 10: a size cap is checked before anything is inflated, and names from the
/// archive are cut short in messages.
@Suite struct OversizedEntryTests {
    @Test func aHugeManifestIsRefusedBeforeItIsInflated() throws {
        // A pseudo-random block repeated: about 100:1, below the zip-bomb ratio the reader refuses.
        var generator = SystemRandomNumberGenerator()
        let block = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
        var json = Data(capacity: 60 << 20)
        while json.count < 60 << 20 { json.append(block) }
        let zip = makeZip([TestZipFile("manifest.json", json, deflate: true)])
        #expect(zip.count < 4 << 20)
        let archive = try ZipArchive(data: zip, name: "big.zip")
        let error = try #require(throws: OTAError.self) { try archive.contents(named: "manifest.json", atMost: 1 << 20, what: "a manifest") }
        #expect(error.message == "big.zip: manifest.json: declares 62914560 bytes, more than the 1 MiB a manifest may have")
        let package = try #require(throws: OTAError.self) { try DFUPackage(zipData: zip, name: "big.zip") }
        #expect(package.message == "big.zip: manifest.json: declares 62914560 bytes, more than the 1 MiB a manifest may have")
    }

    @Test func aManifestThatLiesAboutItsSizeStopsInflatingAtTheDeclaredSize() throws {
        var manifest = TestZipFile("manifest.json", Data(repeating: 0x20, count: 8 << 20), deflate: true)
        manifest.declaredSize = 100
        let error = try #require(throws: OTAError.self) { try DFUPackage(zipData: makeZip([manifest]), name: "liar.zip") }
        #expect(error.message == "liar.zip: manifest.json: inflates past its declared size of 100 bytes")
    }

    @Test func aLongEntryNameIsCutInTheMessage() throws {
        let long = String(repeating: "a", count: 60_000)
        let error = try #require(throws: OTAError.self) { try ZipArchive(data: makeZip([TestZipFile(long + "\\", "x")]), name: "long.zip") }
        #expect(
            error.message
                == "long.zip: \"\(String(repeating: "a", count: 80))… (60001 characters)\": backslash in entry name (files must be at the root of the package)")
    }
}
