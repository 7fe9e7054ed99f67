import Foundation
import OTACore
import OTAProtocolNordicDFU
import Testing

/// The packages built by `nrfutil pkg generate` (see Fixtures/make-fixtures.sh).
enum Fixture {
    static func url(_ name: String, _ ext: String) throws -> URL {
        try #require(
            Bundle.module.url(forResource: name, withExtension: ext, subdirectory: "Fixtures"),
            "missing fixture \(name).\(ext)"
        )
    }

    static func data(_ name: String, _ ext: String) throws -> Data {
        try Data(contentsOf: url(name, ext))
    }

    /// The files of a fixture zip, extracted by our own reader.
    static func files(of zip: String) throws -> [String: Data] {
        let archive = try ZipArchive(data: data(zip, "zip"), name: "\(zip).zip")
        var files: [String: Data] = [:]
        for entry in archive.entries {
            files[entry.name] = try archive.contents(of: entry)
        }
        return files
    }

    /// The app-unsigned.zip files, rezipped after `change`, in manifest, bin, dat order.
    static func modifiedAppZip(
        deflate: Bool = false,
        _ change: (inout [String: Data]) -> Void
    ) throws -> Data {
        var files = try files(of: "app-unsigned")
        change(&files)
        let order =
            ["manifest.json", "app.bin", "app.dat"]
            + files.keys.sorted().filter {
                !["manifest.json", "app.bin", "app.dat"].contains($0)
            }
        return makeZip(order.compactMap { name in files[name].map { TestZipFile(name, $0, deflate: deflate) } })
    }

    // Values printed by `nrfutil pkg display` and Python's hashlib when the fixtures were made.

    /// SHA-256 of app.bin (big-endian, as sha256sum prints it).
    static let appSHA256 = "a3cb06a02df18c4a90a7925cf803b1ee85b1c40caeb18c900b97440e57ece6e4"
    /// The hash stored in every app.dat ("hash (little-endian)" in nrfutil's display).
    static let appInitPacketHash = "e4e6ec570e44970b908cb1ae0cc4b185eeb103f85c92a7904a8cf12da006cba3"
    /// SHA-256 of sd_bl.bin and the hash in sd_bl.dat.
    static let sdBLSHA256 = "278275b37c2bd2ae9a9848ca58d8dabd9638a5614bd001568f9b49664d690cfc"
    static let sdBLInitPacketHash = "fc0c694d66499b8f5601d04b61a53896bddad858ca48989aaed22b7cb3758227"
    /// SHA-256 of bl.bin and the hash in bl.dat.
    static let blSHA256 = "29eb6877404851fa8119c401c8f3be84cc57cd6e63fbe2122f45770f04c70634"
    static let blInitPacketHash = "3406c7040f77452f12e2fb636ecd57cc84bef3c801c41981fa5148407768eb29"
}

/// Lower-case hex.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Bytes from lower-case hex.
func bytes(hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        result.append(UInt8(hex[index..<next], radix: 16) ?? 0)
        index = next
    }
    return result
}

/// Runs `body`, expecting a one-line `invalidImage` error, and returns its message.
@discardableResult
func expectInvalid(
    _ body: () throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) -> String {
    do {
        try body()
        Issue.record("expected an OTAError, got success", sourceLocation: sourceLocation)
        return ""
    } catch let error as OTAError {
        #expect(error.code == .invalidImage, "code \(error.code): \(error.message)", sourceLocation: sourceLocation)
        #expect(!error.message.contains("\n"), "multi-line message: \(error.message)", sourceLocation: sourceLocation)
        return error.message
    } catch {
        Issue.record("expected an OTAError, got \(error)", sourceLocation: sourceLocation)
        return ""
    }
}
