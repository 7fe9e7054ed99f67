import Foundation
import Synchronization

/// A firmware file read through a bounded window, the source of a ``FirmwareImage`` opened with
/// ``FirmwareImage/init(contentsOf:)``.
///
/// Opening reads the file once, computing its CRC-32, its SHA-256 and one CRC-32 per block of
/// ``blockSize`` bytes (4 KiB of checks for a 256 MiB file). Afterwards bytes are read with
/// `pread`, one window of ``windowSize`` bytes at a time (two windows are kept), and each block a
/// window holds is checked against its CRC before any byte of it is handed out. A file changed,
/// truncated or unreadable since it was opened fails the read with one line; the file is never
/// mapped, so a truncation cannot kill the process with SIGBUS.
///
/// Host memory is two windows and the block table, whatever the file's size.
public final class FirmwareImageFile: Sendable {
    /// The bytes each check covers (64 KiB).
    public static let blockSize = 64 << 10
    /// The bytes read at once (256 KiB, four blocks), a multiple of ``blockSize``.
    public static let windowSize = 256 << 10
    /// The windows kept, most recently used first: a sequential stream and a look-back (a resume
    /// check) do not evict each other.
    static let windowsKept = 2

    /// The file's size when it was opened.
    let count: Int
    /// CRC-32 of the file as opened.
    let crc32: UInt32
    /// SHA-256 of the file as opened.
    let sha256: Data
    /// How messages name the file ("firmware.bin").
    let name: String
    private let descriptor: Int32
    private let blockChecks: [UInt32]
    private let windows = Mutex<[(start: Int, bytes: Data)]>([])

    init(_ url: URL, directoryProblem: String) throws(OTAError) {
        let path = url.path
        let shown = MessageText.name(path)
        try FirmwareFile.checkIsFile(url, directoryProblem: directoryProblem)
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw OTAError(.invalidImage, "\(shown): cannot be read (check its permissions)") }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw OTAError(.invalidImage, "\(shown): is not a regular file")
        }
        let size = Int(status.st_size)
        guard size <= FirmwareImage.maximumFileSize else {
            close(descriptor)
            throw OTAError(
                .imageTooLarge, "\(shown): \(size) bytes, more than the \(FirmwareImage.maximumFileSize >> 20) MiB a firmware file may have"
            )
        }
        guard size > 0 else {
            close(descriptor)
            throw OTAError(.invalidImage, "\(url.lastPathComponent) is empty: a firmware image needs at least one byte")
        }
        var crc = CRC32()
        var hash = SHA256()
        var checks: [UInt32] = []
        checks.reserveCapacity((size + Self.blockSize - 1) / Self.blockSize)
        var buffer = [UInt8](repeating: 0, count: Self.windowSize)
        var offset = 0
        while offset < size {
            let length = min(Self.windowSize, size - offset)
            let read = buffer.withUnsafeMutableBytes { Self.readFully(descriptor, into: $0.baseAddress!, count: length, at: offset) }
            guard read == length else {
                close(descriptor)
                throw OTAError(
                    .invalidImage, "\(shown): changed or could not be read while it was opened (at byte \(offset + max(read, 0))); run the update again")
            }
            buffer.withUnsafeBytes { raw in
                let window = UnsafeRawBufferPointer(rebasing: raw[0..<length])
                crc.update(window)
                hash.update(window)
                var block = 0
                while block < length {
                    let end = min(length, block + Self.blockSize)
                    checks.append(CRC32.checksum(UnsafeRawBufferPointer(rebasing: window[block..<end])))
                    block = end
                }
            }
            offset += length
        }
        self.descriptor = descriptor
        self.count = size
        self.crc32 = crc.value
        self.sha256 = Data(hash.finalize())
        self.blockChecks = checks
        self.name = url.lastPathComponent
    }

    deinit {
        close(descriptor)
    }

    /// The bytes of `range`, from a kept window or a window read and checked now.
    func read(_ range: Range<Int>) throws(OTAError) -> Data {
        guard !range.isEmpty else { return Data() }
        return try windows.withLock { (windows) throws(OTAError) -> Data in
            if let index = windows.firstIndex(where: { $0.start <= range.lowerBound && range.upperBound <= $0.start + $0.bytes.count }) {
                // Most recently used first; a sequential stream finds its window first already.
                if index != 0 { windows.swapAt(0, index) }
                let window = windows[0]
                return window.bytes[(range.lowerBound - window.start)..<(range.upperBound - window.start)]
            }
            let start = range.lowerBound / Self.blockSize * Self.blockSize
            let end = min(count, start + Self.windowSize)
            guard range.upperBound <= end else {
                // Longer than what one window holds from here: read it whole, checked, unkept.
                let wholeEnd = min(count, (range.upperBound + Self.blockSize - 1) / Self.blockSize * Self.blockSize)
                let whole = try readChecked(start..<wholeEnd)
                return Data(whole[(range.lowerBound - start)..<(range.upperBound - start)])
            }
            let bytes = try readChecked(start..<end)
            windows.insert((start, bytes), at: 0)
            if windows.count > Self.windowsKept { windows.removeLast() }
            return bytes[(range.lowerBound - start)..<(range.upperBound - start)]
        }
    }

    /// Reads `range` (block-aligned at its start, ending at a block end or the file's end) and
    /// checks every block against the table made at open.
    private func readChecked(_ range: Range<Int>) throws(OTAError) -> Data {
        var bytes = Data(count: range.count)
        let read = bytes.withUnsafeMutableBytes { Self.readFully(descriptor, into: $0.baseAddress!, count: range.count, at: range.lowerBound) }
        if read < 0 {
            let reason = String(cString: strerror(errno))
            throw OTAError(
                .invalidImage,
                "\(MessageText.name(name)) could not be read while it was being sent (block at offset \(range.lowerBound): \(reason)); nothing more was written; run the update again"
            )
        }
        var block = range.lowerBound
        while block < range.upperBound {
            let end = min(range.upperBound, block + Self.blockSize)
            let intact =
                read >= end - range.lowerBound
                && bytes.withUnsafeBytes {
                    CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[(block - range.lowerBound)..<(end - range.lowerBound)]))
                } == blockChecks[block / Self.blockSize]
            guard intact else { throw Self.changed(name, at: block) }
            block = end
        }
        return bytes
    }

    /// The one line for a file that no longer holds what was checked at open.
    static func changed(_ name: String, at offset: Int) -> OTAError {
        OTAError(
            .invalidImage,
            "\(MessageText.name(name)) changed while it was being sent (block at offset \(offset)); nothing more was written; run the update again"
        )
    }

    /// `pread` until `count` bytes or the end of the file; the bytes read, or -1 on an error.
    private static func readFully(_ descriptor: Int32, into base: UnsafeMutableRawPointer, count: Int, at offset: Int) -> Int {
        var done = 0
        while done < count {
            let result = pread(descriptor, base + done, count - done, off_t(offset + done))
            if result < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return -1
            }
            if result == 0 { break }
            done += result
        }
        return done
    }
}
