import Foundation

/// A firmware image to send: its bytes (read into memory, never mapped: a file truncated while
/// mapped would kill the process with SIGBUS), size and CRC-32.
///
/// Chunks are slices of the one buffer: nothing is copied per chunk, so memory stays flat as
/// images grow.
public struct FirmwareImage: Sendable {
    /// The image bytes.
    public let bytes: Data
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
        self.bytes = bytes.startIndex == 0 ? bytes : Data(bytes)
        self.crc32 = CRC32.checksum(self.bytes)
        self.name = name
        self.attachments = attachments
    }

    /// The largest firmware file read: 256 MiB, far above any Bluetooth LE target's flash.
    public static let maximumFileSize = 256 << 20

    /// Loads an image from a file, read into memory once: what is checked is what is sent, and
    /// changing the file during an update changes nothing.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason when the file is missing,
    ///   unreadable, a directory, or empty.
    public init(contentsOf url: URL) throws(OTAError) {
        let data = try FirmwareFile.read(
            url, directoryProblem: "is a directory without manifest.json; a firmware package directory needs one (see docs/manifest.md)"
        )
        try self.init(bytes: data, name: url.lastPathComponent)
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

    /// The number of bytes in the image.
    public var count: Int { bytes.count }

    /// The bytes in `range`, without copying.
    public subscript(range: Range<Int>) -> Data {
        bytes[range]
    }
}
