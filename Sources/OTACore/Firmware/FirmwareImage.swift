import Foundation
import Synchronization

/// A firmware image to send: its size, CRC-32 and SHA-256, and its bytes, read range by range.
///
/// The bytes come from one of two sources:
/// - memory (``init(bytes:name:attachments:)``): generated images, tests, the parts of a package
///   read from a `.zip`; ranges are slices of the one buffer, nothing is copied per chunk;
/// - a regular file (``init(contentsOf:)``), read with `pread` through a bounded window
///   (``FirmwareImageFile/windowSize``), so host memory stays flat whatever the image size. The
///   file is never mapped: a file truncated while mapped would kill the process with SIGBUS.
///
/// What is checked is what is sent: opening a file reads it once, computing its CRC-32, its
/// SHA-256 and a CRC-32 for each block of ``FirmwareImageFile/blockSize`` bytes; every later read
/// is checked against those blocks, so a file changed or truncated during an update fails the
/// read with ``OTAError/Code/invalidImage`` ("firmware.bin changed while it was being sent (block
/// at offset N); nothing more was written; run the update again") instead of sending other bytes.
///
/// ```swift
/// let header = try image[0..<32]             // a range, checked
/// var crc = CRC32()
/// try image.forEachWindow(in: 0..<image.count) { crc.update($0) }   // streaming, bounded memory
/// ```
public struct FirmwareImage: Sendable {
    /// Where the bytes are.
    enum Source: Sendable {
        case memory(Data, SHA256Cache)
        case file(FirmwareImageFile)
    }

    let source: Source
    /// The number of bytes in the image.
    public let count: Int
    /// CRC-32 (IEEE 802.3) of the whole image.
    public let crc32: UInt32
    /// Where the image came from, for messages ("firmware.bin", "generated").
    public let name: String
    /// Small companion data a protocol sends with the image, by name (Nordic DFU's init packet
    /// under `"init-packet"`). Empty for plain images.
    public var attachments: [String: Data] = [:]

    /// Wraps bytes already in memory.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` for an empty image.
    public init(bytes: Data, name: String = "image", attachments: [String: Data] = [:]) throws(OTAError) {
        guard !bytes.isEmpty else {
            throw OTAError(.invalidImage, "\(name) is empty: a firmware image needs at least one byte")
        }
        // Rebase a slice so that offsets are always 0-based.
        let rebased = bytes.startIndex == 0 ? bytes : Data(bytes)
        self.source = .memory(rebased, SHA256Cache())
        self.count = rebased.count
        self.crc32 = CRC32.checksum(rebased)
        self.name = name
        self.attachments = attachments
    }

    /// The largest firmware file read: 256 MiB, far above any Bluetooth LE target's flash.
    public static let maximumFileSize = 256 << 20

    /// Opens an image in a file, read once to compute its digests and block checks, then read
    /// again window by window as the update asks for bytes.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason when the file is missing,
    ///   unreadable, a directory, not a regular file, or empty; ``OTAError/Code/imageTooLarge``
    ///   above ``maximumFileSize``.
    public init(contentsOf url: URL) throws(OTAError) {
        let file = try FirmwareImageFile(
            url, directoryProblem: "is a directory without manifest.json; a firmware package directory needs one (see docs/manifest.md)"
        )
        self.source = .file(file)
        self.count = file.count
        self.crc32 = file.crc32
        self.name = url.lastPathComponent
    }

    /// The same image under another name, with other attachments, without reading it again.
    public func renamed(_ name: String, attachments: [String: Data]) -> FirmwareImage {
        FirmwareImage(source: source, count: count, crc32: crc32, name: name, attachments: attachments)
    }

    private init(source: Source, count: Int, crc32: UInt32, name: String, attachments: [String: Data]) {
        self.source = source
        self.count = count
        self.crc32 = crc32
        self.name = name
        self.attachments = attachments
    }

    /// Why `path` (which exists and is no directory) cannot be a firmware file, or `nil` for a
    /// regular file (symbolic links followed): "is a device, not a regular file", "is a FIFO, not
    /// a regular file". Reading a FIFO or a device would block or never end.
    public static func notRegularFile(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFCHR, S_IFBLK: return "is a device, not a regular file"
        case S_IFIFO: return "is a FIFO, not a regular file"
        case S_IFSOCK: return "is a socket, not a regular file"
        default: return "is not a regular file"
        }
    }

    /// SHA-256 of the whole image: computed when a file is opened, on first use for bytes in
    /// memory.
    public var sha256: Data {
        switch source {
        case .memory(let data, let cache): cache.digest(of: data)
        case .file(let file): file.sha256
        }
    }

    /// Whether the image is read from a file (through a window) rather than held in memory.
    public var isFileBacked: Bool {
        if case .file = source { true } else { false }
    }

    /// The bytes in `range` (0-based, within ``count``): a slice without copying for an image in
    /// memory, a checked read for a file. Keep ranges small (a chunk, an object, a header); use
    /// ``forEachWindow(in:_:)`` to go over large ranges in bounded memory. The result's indices
    /// are its own (a slice of a window): go by `startIndex`, `first`, or iterate, not by image
    /// offsets.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when the file changed, was truncated or cannot be
    ///   read any more since it was opened.
    public subscript(range: Range<Int>) -> Data {
        get throws(OTAError) {
            precondition(range.lowerBound >= 0 && range.upperBound <= count, "range \(range) outside the \(count)-byte image")
            switch source {
            case .memory(let data, _): return data[range]
            case .file(let file): return try file.read(range)
            }
        }
    }

    /// The first `length` bytes (fewer when the image is shorter): a header.
    public func prefix(_ length: Int) throws(OTAError) -> Data {
        try self[0..<Swift.min(Swift.max(length, 0), count)]
    }

    /// Calls `body` with the bytes of `range` in order, at most one window
    /// (``FirmwareImageFile/windowSize``) at a time: for digests over large ranges (a running
    /// CRC, a hash) without holding the range in memory.
    ///
    /// - Throws: as the subscript.
    public func forEachWindow(in range: Range<Int>, _ body: (Data) -> Void) throws(OTAError) {
        var offset = range.lowerBound
        while offset < range.upperBound {
            let end = Swift.min(range.upperBound, (offset / FirmwareImageFile.windowSize + 1) * FirmwareImageFile.windowSize)
            body(try self[offset..<end])
            offset = end
        }
    }

    /// CRC-32 of the bytes in `range`, read window by window.
    public func crc32(of range: Range<Int>) throws(OTAError) -> UInt32 {
        var crc = CRC32()
        try forEachWindow(in: range) { crc.update($0) }
        return crc.value
    }

    /// SHA-256 of the bytes in `range`, read window by window.
    public func sha256(of range: Range<Int>) throws(OTAError) -> Data {
        if range == 0..<count { return sha256 }
        var hash = SHA256()
        try forEachWindow(in: range) { hash.update($0) }
        return Data(hash.finalize())
    }

    /// SHA-256 of the image's first `length` bytes and of the whole image, reading the image
    /// once (an MCUboot image's hash covers its header and body, an upload carries the file's).
    /// When the whole image's digest is known already (a file's, computed when it was opened, or
    /// one computed before), only the prefix is read; otherwise one pass gives both, and the whole
    /// image's is kept for ``sha256``.
    ///
    /// - Throws: as the subscript.
    public func sha256(ofPrefix length: Int) throws(OTAError) -> (prefix: Data, whole: Data) {
        precondition(length >= 0 && length <= count, "prefix of \(length) bytes outside the \(count)-byte image")
        switch source {
        case .memory(let data, let cache) where cache.known == nil:
            var hash = SHA256()
            try forEachWindow(in: 0..<length) { hash.update($0) }
            let prefix = Data(hash.finalize())
            try forEachWindow(in: length..<count) { hash.update($0) }
            return (prefix, cache.store(Data(hash.finalize()), for: data))
        default:
            return (try sha256(of: 0..<length), sha256)
        }
    }

    /// The whole image as one buffer, for the few places that need it in memory (a container to
    /// unpack, a test comparing flash); it reads the whole file for an image in a file.
    ///
    /// - Throws: as the subscript.
    public func allBytes() throws(OTAError) -> Data {
        try self[0..<count]
    }
}

/// The SHA-256 of bytes in memory, computed once on first use.
final class SHA256Cache: Sendable {
    private let value = Mutex<Data?>(nil)

    func digest(of data: Data) -> Data {
        if let known { return known }
        return store(Data(SHA256.hash(data)), for: data)
    }

    /// The digest, when computed already.
    var known: Data? { value.withLock { $0 } }

    /// Keeps `digest`, computed by the caller over `data`, and returns it.
    func store(_ digest: Data, for data: Data) -> Data {
        value.withLock { $0 = digest }
        return digest
    }
}
