import Foundation
import OTACore
import Testing

@Suite struct FirmwareImageTests {
    private func temporaryFile(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-test-\(UUID().uuidString).bin")
        try Data(bytes).write(to: url)
        return url
    }

    @Test func loadsAFileAndComputesItsCRC() throws {
        let url = try temporaryFile(Array("hello world".utf8))
        defer { try? FileManager.default.removeItem(at: url) }
        let image = try FirmwareImage(contentsOf: url)
        #expect(image.count == 11)
        #expect(image.crc32 == 0x0D4A_1185)
        #expect(image.name == url.lastPathComponent)
    }

    @Test func emptyFileIsRefused() throws {
        let url = try temporaryFile([])
        defer { try? FileManager.default.removeItem(at: url) }
        let error = try #require(throws: OTAError.self) { try FirmwareImage(contentsOf: url) }
        #expect(error.code == .invalidImage)
        #expect(error.message.contains("is empty"))
    }

    @Test func missingFileIsRefused() throws {
        let error = try #require(throws: OTAError.self) {
            try FirmwareImage(contentsOf: URL(fileURLWithPath: "/nonexistent/firmware.bin"))
        }
        #expect(error.code == .invalidImage)
        #expect(error.message == "/nonexistent/firmware.bin: no such file")
    }

    @Test func directoryIsRefused() throws {
        let error = try #require(throws: OTAError.self) {
            try FirmwareImage(contentsOf: FileManager.default.temporaryDirectory)
        }
        #expect(error.message.contains("is a directory"))
    }

    @Test func slicedInputIsRebasedToZero() throws {
        let backing = Data([9, 9, 1, 2, 3, 9])
        let image = try FirmwareImage(bytes: backing[2..<5])
        #expect((try image.allBytes()).startIndex == 0)
        #expect(try image[0..<3] == Data([1, 2, 3]))
        #expect(image.crc32 == 0x55BC_801D)
    }
}
