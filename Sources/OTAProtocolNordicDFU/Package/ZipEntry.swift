import OTACore

/// One file in a ``ZipArchive``, as described by the archive's central directory and checked
/// against its local header.
///
/// An entry only describes the file; ``ZipArchive/contents(of:)`` extracts and verifies it.
public struct ZipEntry: Sendable, Hashable {
    /// How an entry's bytes are stored.
    public struct Method: WireCode {
        /// The zip compression method number.
        public let rawValue: UInt16

        /// Creates a method from its number.
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        /// Method 0: the bytes are stored as they are.
        public static let stored = Method(rawValue: 0)
        /// Method 8: raw deflate (RFC 1951).
        public static let deflate = Method(rawValue: 8)

        public static let meanings: [Method: String] = [
            .stored: "stored", .deflate: "deflate",
        ]

        public static func meaning(ofUnknown rawValue: UInt16) -> String { "method \(rawValue)" }
    }

    /// The file name: a plain name at the root of the archive (no directories).
    public let name: String
    /// How the bytes are stored.
    public let method: Method
    /// The CRC-32 the archive declares for the uncompressed bytes.
    public let crc32: UInt32
    /// The number of bytes the entry occupies in the archive.
    public let compressedSize: Int
    /// The number of bytes the entry holds once extracted, as declared by the archive.
    public let uncompressedSize: Int

    /// Where the entry's local header starts in the archive data.
    let headerOffset: Int
    /// Where the entry's (compressed) bytes start in the archive data.
    let dataOffset: Int

    /// The range of the entry's (compressed) bytes in the archive data.
    var dataRange: Range<Int> { dataOffset..<(dataOffset + compressedSize) }
}
