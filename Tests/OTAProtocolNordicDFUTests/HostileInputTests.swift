import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATransportSimulator
import Testing

/// Whatever the bytes, opening a package either succeeds or throws one line: it never crashes,
/// hangs or allocates without bound.
@Suite struct HostileInputTests {
    @Test(arguments: [0, 1, 21, 22, 23, 100, 4096, 70_000])
    func randomBytes(count: Int) {
        var generator = SeededRandom(seed: UInt64(count))
        let data = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let message = expectInvalid { _ = try DFUPackage(zipData: data, name: "random.zip") }
        #expect(message.hasPrefix("random.zip: "))
    }

    @Test func randomBytesEndingWithAnEndRecord() {
        // An end of central directory record after garbage: offsets point anywhere.
        var generator = SeededRandom(seed: 99)
        for _ in 0..<200 {
            var data = Data((0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) })
            data.append(contentsOf: [0x50, 0x4B, 0x05, 0x06, 0, 0, 0, 0])
            data.append(contentsOf: (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) })
            data.append(contentsOf: [0, 0])
            _ = try? DFUPackage(zipData: data, name: "r.zip")
        }
    }

    @Test(arguments: ["app-unsigned", "sd-bl-app", "app-deflated"])
    func truncatedAtEveryLength(fixture: String) throws {
        let zip = try Fixture.data(fixture, "zip")
        for length in 0..<zip.count {
            let message = expectInvalid { _ = try DFUPackage(zipData: zip.prefix(length), name: "cut.zip") }
            #expect(message.hasPrefix("cut.zip: "))
        }
    }

    @Test(arguments: ["app-signed", "sd-bl-app", "app-deflated"])
    func corruptedBytesNeverCrash(fixture: String) throws {
        let original = try Fixture.data(fixture, "zip")
        var generator = SeededRandom(seed: 7)
        for _ in 0..<1500 {
            var zip = original
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<zip.count, using: &generator)
                zip[index] = UInt8.random(in: 0...255, using: &generator)
            }
            do {
                let inspection = try DFUPackage.inspect(zipData: zip, name: "bad.zip")
                _ = inspection.report
            } catch {
                #expect(!error.message.contains("\n"))
                #expect(error.message.hasPrefix("bad.zip: "))
            }
        }
    }

    @Test func deeplyNestedManifest() throws {
        let json = String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)
        let message = expectInvalid { _ = try DFUManifest(json: Data(json.utf8), name: "manifest.json") }
        #expect(message.hasPrefix("manifest.json: "))
        let wrapped = #"{"manifest": {"application": "# + String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_003)
        let second = expectInvalid { _ = try DFUManifest(json: Data(wrapped.utf8), name: "manifest.json") }
        #expect(second.hasPrefix("manifest.json: "))
    }

    @Test func oversizeManifest() throws {
        let json = #"{"manifest": {}, "padding": ""# + String(repeating: " ", count: 1 << 20) + #""}"#
        let message = expectInvalid { _ = try DFUManifest(json: Data(json.utf8), name: "manifest.json") }
        #expect(message == "manifest.json: \(json.utf8.count) bytes is too large for a manifest")
    }

    @Test func corruptedInitPacketsNeverCrash() throws {
        let original = try #require(Fixture.files(of: "sd-bl-app")["sd_bl.dat"])
        var generator = SeededRandom(seed: 3)
        for _ in 0..<3000 {
            var dat = original
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<dat.count, using: &generator)
                dat[index] = UInt8.random(in: 0...255, using: &generator)
            }
            do {
                _ = try InitPacket(bytes: dat, name: "sd_bl.dat")
            } catch {
                #expect(error.code == .invalidImage)
                #expect(error.message.hasPrefix("sd_bl.dat: "))
            }
        }
    }
}
