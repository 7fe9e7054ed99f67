import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Synchronization
import Testing

/// Issue 18 item 5: images read from a file through the bounded window arrive byte-identical
/// with every protocol, at sizes around the window's boundaries and the link's write size; a
/// file changed or truncated during the update fails it in one line, and the device never gets
/// the changed bytes.
@Suite struct FileImageTests {
    static let window = FirmwareImageFile.windowSize

    /// An image of exactly `fileSize` bytes as `entry` sends it (a raw image, or wrapped as
    /// MCUboot), written to a temporary file and opened from there.
    static func fileImage(_ entry: CampaignProtocol, fileSize: Int, seed: UInt64 = 7) throws -> (FirmwareImage, URL) {
        let overhead = try entry.prepare(try UpdateHarness.image(size: 1000)).count - 1000
        let prepared = try entry.prepare(try UpdateHarness.image(size: fileSize - overhead, seed: seed))
        #expect(prepared.count == fileSize)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-window-\(UUID().uuidString).bin")
        try prepared.bytes.write(to: url)
        let image = try FirmwareImage(contentsOf: url).renamed(prepared.name, attachments: prepared.attachments)
        #expect(image.isFileBacked && image.crc32 == prepared.crc32 && image.sha256 == prepared.sha256)
        return (image, url)
    }

    /// `entry`'s first link with an update slot large enough for a few windows.
    static func harness(_ entry: CampaignProtocol) -> UpdateHarness {
        var profile = entry.links[0].profile
        profile.slotSize = 2 << 20
        return UpdateHarness(profile: profile, makeModel: entry.makeModel)
    }

    static func installedBytes(_ entry: CampaignProtocol, _ harness: UpdateHarness, count: Int) -> Data? {
        guard entry.installed(harness.device.model) else { return nil }
        return entry.installedBytes.map { $0(harness.device.model) } ?? harness.flashContents(count)
    }

    @Test(arguments: CampaignProtocol.all.indices)
    func byteIdenticalFromAFileAroundTheWindow(_ index: Int) async throws {
        let entry = CampaignProtocol.all[index]
        let payload = entry.payloadSize(on: CampaignLink(profile: Self.harness(entry).device.profile, centralMTU: 517))
        for size in [payload - 1, payload, payload + 1, Self.window - 1, Self.window, Self.window + 1, 3 * Self.window + 4093] {
            let (image, url) = try Self.fileImage(entry, fileSize: size)
            defer { try? FileManager.default.removeItem(at: url) }
            let harness = Self.harness(entry)
            let outcome = try await harness.update(image, using: entry.makeClient())
            if case .failure(let error) = outcome.result { Issue.record("\(entry.name), \(size) bytes: \(error)") }
            #expect(Self.installedBytes(entry, harness, count: size) == (try image.allBytes()), "\(entry.name), \(size) bytes")
        }
    }

    /// A byte of the second window overwritten once the first window is being sent: the update
    /// fails with the one line when it reaches that block, and the changed byte never reaches the
    /// device.
    @Test(arguments: CampaignProtocol.all.indices)
    func aFileChangedMidUpdateFailsAndTheChangeIsNeverSent(_ index: Int) async throws {
        let entry = CampaignProtocol.all[index]
        let size = 3 * Self.window + 4093
        let (image, url) = try Self.fileImage(entry, fileSize: size)
        defer { try? FileManager.default.removeItem(at: url) }
        let changedAt = Self.window + 3 * FirmwareImageFile.blockSize / 2
        let original = try image[changedAt..<(changedAt + 1)].first!
        let changedTo = original == 0x5A ? 0xA5 : 0x5A as UInt8
        let harness = Self.harness(entry)
        let changed = Mutex(false)
        let outcome = try await harness.update(image, using: entry.makeClient()) { event in
            guard case .progress(let progress, _) = event, progress.position >= 16 << 10 else { return }
            changed.withLock { done in
                guard !done, let handle = try? FileHandle(forWritingTo: url) else { return }
                try? handle.seek(toOffset: UInt64(changedAt))
                try? handle.write(contentsOf: Data([changedTo]))
                try? handle.close()
                done = true
            }
        }
        #expect(changed.withLock { $0 }, "\(entry.name): the file was changed during the update")
        let error = try outcome.failure()
        #expect(error.code == .invalidImage)
        #expect(
            error.message.hasSuffix(
                "changed while it was being sent (block at offset \(changedAt / FirmwareImageFile.blockSize * FirmwareImageFile.blockSize)); nothing more was written; run the update again"
            ),
            "\(entry.name): \(error.message)")
        #expect(harness.flashContents(size)[changedAt] != changedTo, "\(entry.name): the changed byte reached the device")
        #expect(!entry.installed(harness.device.model))
    }

    /// The file cut short during the update: the same line, no crash (a mapped file would raise
    /// SIGBUS here).
    @Test(arguments: CampaignProtocol.all.indices)
    func aFileTruncatedMidUpdateFailsInOneLine(_ index: Int) async throws {
        let entry = CampaignProtocol.all[index]
        let size = 3 * Self.window + 4093
        let (image, url) = try Self.fileImage(entry, fileSize: size)
        defer { try? FileManager.default.removeItem(at: url) }
        let harness = Self.harness(entry)
        let cut = Mutex(false)
        let outcome = try await harness.update(image, using: entry.makeClient()) { event in
            guard case .progress(let progress, _) = event, progress.position >= 16 << 10 else { return }
            cut.withLock { done in
                guard !done else { return }
                done = truncate(url.path, off_t(Self.window + 100)) == 0
            }
        }
        #expect(cut.withLock { $0 })
        let error = try outcome.failure()
        #expect(error.code == .invalidImage)
        #expect(error.message.contains("changed while it was being sent (block at offset"), "\(entry.name): \(error.message)")
        #expect(!entry.installed(harness.device.model))
    }
}
