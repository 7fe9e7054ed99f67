import Foundation
import Testing

/// The imgtool-made images in `Fixtures/` (see `Fixtures/make-fixtures.sh`).
enum Fixture {
    static func data(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"), "missing fixture \(name)")
        return try Data(contentsOf: url)
    }

    /// imgtool's own verdict on an image's digest (`imgtool verify`), recorded by the script.
    static func imgtoolDigest(_ name: String) throws -> String {
        let lines = String(decoding: try data("imgtool-verify.txt"), as: UTF8.self).split(separator: "\n")
        let line = try #require(lines.first { $0.hasPrefix(name + "\t") }, "no imgtool verdict for \(name)")
        let words = line.split(separator: " ")
        let index = try #require(words.firstIndex(of: "digest:"))
        return String(words[index + 1])
    }

    /// `sha256sum` of a fixture, recorded by the script.
    static func fileSHA256(_ name: String) throws -> String {
        let lines = String(decoding: try data("file-sha256.txt"), as: UTF8.self).split(separator: "\n")
        let line = try #require(lines.first { $0.hasPrefix(name + "\t") }, "no file digest for \(name)")
        return String(line.split(separator: "\t")[1])
    }
}
