import Foundation
import OTACore
import Testing

/// A firmware file read through the bounded window: the same bytes and digests as in memory at
/// every boundary, and one line (never other bytes, never SIGBUS) once the file changes.
@Suite struct FirmwareImageFileTests {
    static let block = FirmwareImageFile.blockSize
    static let window = FirmwareImageFile.windowSize

    static func bytes(_ count: Int, seed: UInt32 = 3) -> Data {
        var state = seed
        return Data(
            (0..<count).map { _ in
                state = state &* 1_664_525 &+ 1_013_904_223
                return UInt8(truncatingIfNeeded: state >> 24)
            })
    }

    static func file(_ data: Data) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-window-\(UUID().uuidString).bin")
        try data.write(to: url)
        return url
    }

    static func overwrite(_ url: URL, at offset: Int, with byte: UInt8) throws {
        let handle = try FileHandle(forWritingTo: url)
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data([byte]))
        try handle.close()
    }

    @Test(arguments: [1, block - 1, block, block + 1, window - 1, window, window + 1, 3 * window + 4093])
    func readsAndDigestsMatchTheBytesInMemory(size: Int) throws {
        let data = Self.bytes(size)
        let url = try Self.file(data)
        defer { try? FileManager.default.removeItem(at: url) }
        let image = try FirmwareImage(contentsOf: url)
        let memory = try FirmwareImage(bytes: data)
        #expect(image.isFileBacked && !memory.isFileBacked)
        #expect(image.count == size && image.crc32 == memory.crc32 && image.sha256 == memory.sha256)
        #expect(image.sha256 == Data(SHA256.hash(data)))
        // Chunk by chunk (244: never aligned to a block), as the engine streams.
        var streamed = Data()
        var offset = 0
        while offset < size {
            let end = min(size, offset + 244)
            streamed += try image[offset..<end]
            offset = end
        }
        #expect(streamed == data)
        // Ranges across every window boundary, and one longer than a window.
        for boundary in stride(from: Self.window, to: size, by: Self.window) {
            let range = (boundary - 3)..<min(size, boundary + 5)
            #expect(Data(try image[range]) == data[range])
        }
        #expect(Data(try image[0..<size]) == data)
        #expect(try image.crc32(of: 0..<size) == image.crc32)
        if size > 10 { #expect(try image.sha256(of: 7..<size) == Data(SHA256.hash(data[7..<size]))) }
        var windows = 0
        try image.forEachWindow(in: 0..<size) { chunk in
            #expect(chunk.count <= Self.window)
            windows += 1
        }
        #expect(windows == (size + Self.window - 1) / Self.window)
    }

    @Test func aByteChangedInALaterBlockFailsTheReadOfThatBlock() throws {
        let data = Self.bytes(3 * Self.window + 4093)
        let url = try Self.file(data)
        defer { try? FileManager.default.removeItem(at: url) }
        let image = try FirmwareImage(contentsOf: url)
        #expect(try image[0..<100] == data[0..<100])
        let changedAt = 2 * Self.window + Self.block + 17
        try Self.overwrite(url, at: changedAt, with: ~data[changedAt])
        // The window already read and checked keeps serving what was checked.
        #expect(Data(try image[200..<300]) == data[200..<300])
        // The next window holds only unchanged blocks.
        #expect(Data(try image[Self.window..<(Self.window + 10)]) == data[Self.window..<(Self.window + 10)])
        let error = #expect(throws: OTAError.self) { try image[(changedAt - 5)..<(changedAt + 5)] }
        #expect(error?.code == .invalidImage)
        #expect(
            error?.message
                == "\(url.lastPathComponent) changed while it was being sent (block at offset \(2 * Self.window + Self.block)); nothing more was written; run the update again"
        )
        // Digests over the changed block fail too instead of answering for other bytes.
        #expect(throws: OTAError.self) { try image.crc32(of: 0..<image.count) }
    }

    @Test func aFileCutShortFailsTheReadOfTheFirstMissingBlock() throws {
        let data = Self.bytes(2 * Self.window + 100)
        let url = try Self.file(data)
        defer { try? FileManager.default.removeItem(at: url) }
        let image = try FirmwareImage(contentsOf: url)
        #expect(truncate(url.path, off_t(Self.window + 10)) == 0)
        // Block at the window's start is now 10 bytes long instead of 64 KiB.
        let error = #expect(throws: OTAError.self) { try image[Self.window..<(Self.window + 5)] }
        #expect(error?.message.contains("changed while it was being sent (block at offset \(Self.window))") == true)
        // A file grown back to its size with other bytes is still refused.
        let handle = try FileHandle(forWritingTo: url)
        try handle.write(contentsOf: Self.bytes(2 * Self.window + 100, seed: 9))
        try handle.close()
        #expect(throws: OTAError.self) { try image[0..<1] }
    }

    @Test func anEmptyFileIsRefusedAtOpen() throws {
        let url = try Self.file(Data())
        defer { try? FileManager.default.removeItem(at: url) }
        let error = #expect(throws: OTAError.self) { try FirmwareImage(contentsOf: url) }
        #expect(error?.code == .invalidImage)
        #expect(error?.message.contains("is empty") == true)
    }

    @Test func renamingKeepsTheSourceAndReplacesAttachments() throws {
        let data = Self.bytes(5000)
        let url = try Self.file(data)
        defer { try? FileManager.default.removeItem(at: url) }
        let image = try FirmwareImage(contentsOf: url).renamed("app.bin", attachments: ["init-packet": Data([1])])
        #expect(image.name == "app.bin" && image.attachments == ["init-packet": Data([1])] && image.isFileBacked)
        #expect(try image.allBytes() == data)
    }
}
