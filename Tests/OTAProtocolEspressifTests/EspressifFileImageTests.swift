import Foundation
import OTACore
import OTAProtocolEspressif
import OTATestSupport
import OTATransportSimulator
import Synchronization
import Testing

/// Issue 18 item 5 for Espressif: app images read from a file through the bounded window (the
/// app-image check reads the header and hashes window by window) arrive byte-identical around
/// the window's boundaries; a file changed mid-update fails in one line.
@Suite struct EspressifFileImageTests {
    static let window = FirmwareImageFile.windowSize

    /// An app image of exactly `fileSize` bytes in a temporary file (the largest app image that
    /// fits, then padding after it, as a signature block would be), opened from there.
    static func appImageFile(fileSize: Int) throws -> (FirmwareImage, URL) {
        var payload = fileSize - 100
        var bytes = try EspressifHarness.appImage(payload: payload).bytes
        while bytes.count > fileSize {
            payload -= 16
            bytes = try EspressifHarness.appImage(payload: payload).bytes
        }
        bytes += Data(repeating: 0xFF, count: fileSize - bytes.count)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-esp-window-\(UUID().uuidString).bin")
        try bytes.write(to: url)
        return (try FirmwareImage(contentsOf: url), url)
    }

    static func profile() -> DeviceProfile {
        var profile = DeviceProfile.esp32S3MTU244TwoM
        profile.slotSize = 2 << 20
        return profile
    }

    @Test(arguments: [window - 1, window, window + 1, 3 * window + 4093])
    func appImagesFromAFileArriveByteIdentical(size: Int) async throws {
        let (image, url) = try Self.appImageFile(fileSize: size)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(image.isFileBacked && image.count == size)
        let harness = EspressifHarness(profile: Self.profile())
        _ = try await harness.update(image, check: .espApp).result.get()
        #expect(harness.base.flashContents(size) == (try image.allBytes()))
        #expect(harness.model.installedLength == size)
    }

    @Test func aFileChangedMidUpdateFailsAndTheChangeIsNeverSent() async throws {
        let size = 3 * Self.window + 4093
        let (image, url) = try Self.appImageFile(fileSize: size)
        defer { try? FileManager.default.removeItem(at: url) }
        let changedAt = 2 * Self.window + 1000
        let changedTo = ~(try image[changedAt..<(changedAt + 1)].first!)
        let harness = EspressifHarness(profile: Self.profile())
        let changed = Mutex(false)
        let outcome = try await harness.base.update(image, using: EspressifClient(configuration: .init(imageCheck: .espApp))) { event in
            guard case .progress(let progress, _) = event, progress.position >= 16 << 10 else { return }
            changed.withLock { done in
                guard !done, let handle = try? FileHandle(forWritingTo: url) else { return }
                try? handle.seek(toOffset: UInt64(changedAt))
                try? handle.write(contentsOf: Data([changedTo]))
                try? handle.close()
                done = true
            }
        }
        #expect(changed.withLock { $0 })
        let error = try outcome.failure()
        #expect(error.code == .invalidImage)
        #expect(error.message.contains("changed while it was being sent (block at offset \(2 * Self.window)); nothing more was written"))
        #expect(harness.base.flashContents(size)[changedAt] != changedTo)
    }
}
