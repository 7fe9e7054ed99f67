import Foundation
import OTACore

/// A read-only zip archive held in memory, made to open firmware packages downloaded from
/// anywhere.
///
/// Opening an archive parses and checks its whole structure: the end of central directory
/// record, every central directory entry and the local header it points to. Extracting an entry
/// (``contents(of:)``) inflates it within its declared size and verifies its CRC-32.
///
/// Only what a DFU package needs is accepted: files at the root of a single-disk, non-ZIP64
/// archive, stored or deflated, unencrypted. Everything else is refused with a one-line
/// ``OTAError`` (code ``OTAError/Code/invalidImage``) that names the archive and the problem,
/// for example `app.zip: ../evil.bin: path traversal in entry name`.
///
/// - Important: No input can make the reader crash, read out of bounds, or allocate more than
///   the ``Limits`` allow: every offset is checked before it is read, and every size comes from
///   the archive only after it has been checked against the limits.
public struct ZipArchive: Sendable {
    /// Bounds that protect against hostile archives (zip bombs, absurd sizes).
    public struct Limits: Sendable, Hashable {
        /// The largest uncompressed size accepted for one entry. Default 64 MiB.
        public var maxEntrySize: Int
        /// The largest sum of uncompressed sizes accepted for the archive. Default 128 MiB.
        public var maxTotalSize: Int
        /// The largest accepted ratio of uncompressed to compressed size. Default 1000.
        public var maxCompressionRatio: Int
        /// The largest number of entries accepted. Default 64: a DFU package holds a handful.
        public var maxEntryCount: Int

        /// Creates limits; the defaults suit Nordic DFU packages.
        public init(
            maxEntrySize: Int = 64 << 20,
            maxTotalSize: Int = 128 << 20,
            maxCompressionRatio: Int = 1000,
            maxEntryCount: Int = 64
        ) {
            self.maxEntrySize = maxEntrySize
            self.maxTotalSize = maxTotalSize
            self.maxCompressionRatio = maxCompressionRatio
            self.maxEntryCount = maxEntryCount
        }
    }

    /// The archive's name, used to start every error message ("app.zip").
    public let name: String
    /// The entries, in central directory order.
    public let entries: [ZipEntry]
    /// The limits the archive was opened with; extraction honours them too.
    public let limits: Limits
    /// The whole archive, 0-based.
    let data: Data

    /// Opens an archive held in memory, checking its structure.
    ///
    /// - Parameters:
    ///   - data: The archive bytes.
    ///   - name: A name for messages, usually the file name ("app.zip").
    ///   - limits: Size bounds; the defaults suit DFU packages.
    /// - Throws: ``OTAError/Code/invalidImage`` naming the archive and the first problem found.
    public init(data: Data, name: String, limits: Limits = Limits()) throws(OTAError) {
        self.name = name
        self.limits = limits
        self.data = data.startIndex == 0 ? data : Data(data)
        self.entries = try ZipDirectoryParser(data: self.data, name: name, limits: limits).parse()
    }

    /// Opens an archive from a file.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when the file cannot be read or is not an
    ///   acceptable zip archive.
    public init(contentsOf url: URL, limits: Limits = Limits()) throws(OTAError) {
        let data = try FirmwareFile.read(url, directoryProblem: "is a directory, not a file")
        try self.init(data: data, name: url.lastPathComponent, limits: limits)
    }

    /// The entry with exactly this name, if there is one.
    public func entry(named name: String) -> ZipEntry? {
        entries.first { $0.name == name }
    }
}

// MARK: - Central directory parsing

/// Parses and checks the structure of an archive; every read is bounds-checked.
private struct ZipDirectoryParser {
    let data: Data
    let name: String
    let limits: ZipArchive.Limits

    static let endOfCentralDirectorySignature: UInt32 = 0x0605_4b50
    static let zip64LocatorSignature: UInt32 = 0x0706_4b50
    static let centralHeaderSignature: UInt32 = 0x0201_4b50
    static let localHeaderSignature: UInt32 = 0x0403_4b50
    static let endOfCentralDirectorySize = 22
    static let centralHeaderSize = 46
    static let localHeaderSize = 30
    static let maxCommentSize = 0xFFFF
    static let zip64ExtraFieldID: UInt16 = 0x0001

    func fail(_ problem: String) -> OTAError {
        OTAError(.invalidImage, "\(name): \(problem)")
    }

    func parse() throws(OTAError) -> [ZipEntry] {
        let end = try findEndOfCentralDirectory()
        let directory = try readEndOfCentralDirectory(at: end)
        var entries: [ZipEntry] = []
        var names = Set<String>()
        var totalSize = 0
        var offset = directory.offset
        let directoryEnd = directory.offset + directory.size
        for index in 0..<directory.entryCount {
            let (entry, next) = try readCentralHeader(
                at: offset, directoryEnd: directoryEnd, index: index,
                centralDirectoryOffset: directory.offset)
            guard names.insert(entry.name).inserted else {
                throw fail("\(MessageText.name(entry.name)): duplicate entry name")
            }
            totalSize += entry.uncompressedSize
            guard totalSize <= limits.maxTotalSize else {
                throw fail("entries declare more than \(PackageText.megabytes(limits.maxTotalSize)) in total, refused")
            }
            entries.append(entry)
            offset = next
        }
        guard offset == directoryEnd else {
            throw fail("central directory size \(directory.size) does not match its \(directory.entryCount) entries")
        }
        try checkNoOverlap(entries)
        return entries
    }

    /// Finds the end of central directory record: it sits in the last 22 bytes + the largest
    /// comment (64 KiB), so search backwards from the end within that window.
    func findEndOfCentralDirectory() throws(OTAError) -> Int {
        let size = Self.endOfCentralDirectorySize
        guard data.count >= size else {
            throw fail("not a zip archive (\(data.count) bytes is too short)")
        }
        let last = data.count - size
        let first = max(0, last - Self.maxCommentSize)
        var offset = last
        while offset >= first {
            if data[offset] == 0x50,
                data.uint32(at: offset) == Self.endOfCentralDirectorySignature,
                let commentLength = data.uint16(at: offset + 20),
                offset + size + Int(commentLength) <= data.count
            {
                return offset
            }
            offset -= 1
        }
        throw fail("not a zip archive, or truncated (no end of central directory record)")
    }

    struct Directory {
        var entryCount: Int
        var size: Int
        var offset: Int
    }

    func readEndOfCentralDirectory(at end: Int) throws(OTAError) -> Directory {
        guard let disk = data.uint16(at: end + 4),
            let directoryDisk = data.uint16(at: end + 6),
            let entriesOnDisk = data.uint16(at: end + 8),
            let totalEntries = data.uint16(at: end + 10),
            let directorySize = data.uint32(at: end + 12),
            let directoryOffset = data.uint32(at: end + 16)
        else {
            throw fail("truncated end of central directory record")
        }
        if end >= 20, data.uint32(at: end - 20) == Self.zip64LocatorSignature {
            throw fail("ZIP64 archives are not supported")
        }
        if totalEntries == 0xFFFF || entriesOnDisk == 0xFFFF || directorySize == 0xFFFF_FFFF
            || directoryOffset == 0xFFFF_FFFF
        {
            throw fail("ZIP64 archives are not supported")
        }
        guard disk == 0, directoryDisk == 0, entriesOnDisk == totalEntries else {
            throw fail("split (multi-disk) archives are not supported")
        }
        guard totalEntries > 0 else {
            throw fail("the archive is empty")
        }
        guard Int(totalEntries) <= limits.maxEntryCount else {
            throw fail("\(totalEntries) entries, more than the \(limits.maxEntryCount) a firmware package may hold")
        }
        let offset = Int(directoryOffset)
        let size = Int(directorySize)
        guard offset + size <= end else {
            throw fail("truncated (central directory at bytes \(offset)..<\(offset + size) is outside the file)")
        }
        return Directory(entryCount: Int(totalEntries), size: size, offset: offset)
    }

    func readCentralHeader(
        at offset: Int,
        directoryEnd: Int,
        index: Int,
        centralDirectoryOffset: Int
    ) throws(OTAError) -> (ZipEntry, next: Int) {
        let fixedEnd = offset + Self.centralHeaderSize
        guard fixedEnd <= directoryEnd,
            data.uint32(at: offset) == Self.centralHeaderSignature,
            let fields = ZipHeaderFields(data, at: offset + 6),
            let commentLength = data.uint16(at: offset + 32),
            let diskStart = data.uint16(at: offset + 34),
            let localOffset = data.uint32(at: offset + 42)
        else {
            throw fail("central directory entry \(index + 1) is truncated or damaged")
        }
        let (flags, methodNumber, crc) = (fields.flags, fields.method, fields.crc)
        let (compressed, uncompressed) = (fields.compressed, fields.uncompressed)
        let nameEnd = fixedEnd + Int(fields.nameLength)
        let extraEnd = nameEnd + Int(fields.extraLength)
        let next = extraEnd + Int(commentLength)
        guard next <= directoryEnd else {
            throw fail("central directory entry \(index + 1) runs past the end of the directory")
        }
        let nameBytes = data[fixedEnd..<nameEnd]
        let entryName = try checkedName(nameBytes, index: index)

        // Refusals in order of how fundamental they are.
        if compressed == 0xFFFF_FFFF || uncompressed == 0xFFFF_FFFF || localOffset == 0xFFFF_FFFF
            || hasZip64Field(data[nameEnd..<extraEnd])
        {
            throw fail("\(entryName): ZIP64 entries are not supported")
        }
        guard diskStart == 0 else {
            throw fail("split (multi-disk) archives are not supported")
        }
        // Bit 0: encrypted; bit 6: strong encryption; bit 13: encrypted central directory.
        guard flags & 0x2041 == 0 else {
            throw fail("\(entryName): entry is encrypted; DFU packages must not be")
        }
        let method = ZipEntry.Method(rawValue: methodNumber)
        guard method == .stored || method == .deflate else {
            throw fail("\(entryName): unsupported compression method \(methodNumber) (only stored and deflate)")
        }
        let compressedSize = Int(compressed)
        let uncompressedSize = Int(uncompressed)
        guard uncompressedSize <= limits.maxEntrySize else {
            throw fail("\(entryName): declares \(uncompressedSize) bytes, more than the \(PackageText.megabytes(limits.maxEntrySize)) limit")
        }
        if method == .stored, compressedSize != uncompressedSize {
            throw fail("\(entryName): stored entry has compressed size \(compressedSize) but size \(uncompressedSize)")
        }
        if method == .deflate,
            UInt64(uncompressedSize) > UInt64(max(compressedSize, 1)) * UInt64(limits.maxCompressionRatio)
        {
            throw fail(
                "\(entryName): compression ratio above \(limits.maxCompressionRatio):1 (\(uncompressedSize) bytes from \(compressedSize)), refused as a possible zip bomb"
            )
        }

        let dataOffset = try checkLocalHeader(
            at: Int(localOffset), entryName: entryName, nameBytes: nameBytes, central: fields,
            centralDirectoryOffset: centralDirectoryOffset
        )
        let entry = ZipEntry(
            name: entryName, method: method, crc32: crc, compressedSize: compressedSize,
            uncompressedSize: uncompressedSize, headerOffset: Int(localOffset), dataOffset: dataOffset
        )
        return (entry, next)
    }

    /// Checks the local header against the central directory; returns where the data starts.
    func checkLocalHeader(
        at offset: Int,
        entryName: String,
        nameBytes: Data,
        central: ZipHeaderFields,
        centralDirectoryOffset: Int
    ) throws(OTAError) -> Int {
        let fixedEnd = offset + Self.localHeaderSize
        guard fixedEnd <= centralDirectoryOffset,
            data.uint32(at: offset) == Self.localHeaderSignature,
            let local = ZipHeaderFields(data, at: offset + 4)
        else {
            throw fail("\(entryName): local header is missing or damaged (at byte \(offset))")
        }
        let nameEnd = fixedEnd + Int(local.nameLength)
        let dataOffset = nameEnd + Int(local.extraLength)
        guard dataOffset <= centralDirectoryOffset else {
            throw fail("\(entryName): local header runs into the central directory")
        }
        guard data[fixedEnd..<nameEnd] == nameBytes else {
            throw fail("\(entryName): local header names a different file than the central directory")
        }
        guard local.method == central.method else {
            throw fail("\(entryName): local header says method \(local.method), central directory says \(central.method)")
        }
        guard local.flags & 0x2041 == 0 else {
            throw fail("\(entryName): entry is encrypted; DFU packages must not be")
        }
        if hasZip64Field(data[nameEnd..<dataOffset]) {
            throw fail("\(entryName): ZIP64 entries are not supported")
        }
        // Bit 3: CRC and sizes follow the data (in a data descriptor) and may be 0 here.
        let usesDataDescriptor = central.flags & 0x0008 != 0 || local.flags & 0x0008 != 0
        if !usesDataDescriptor {
            guard local.crc == central.crc, local.compressed == central.compressed, local.uncompressed == central.uncompressed
            else {
                throw fail("\(entryName): local header CRC or sizes differ from the central directory")
            }
        }
        guard dataOffset + Int(central.compressed) <= centralDirectoryOffset else {
            throw fail("truncated: \(entryName) data runs past the start of the central directory")
        }
        return dataOffset
    }

    /// Checks that a name is a plain file name at the root of the archive.
    func checkedName(_ bytes: Data, index: Int) throws(OTAError) -> String {
        guard !bytes.isEmpty else {
            throw fail("entry \(index + 1) has an empty name")
        }
        guard let name = String(validating: bytes, as: UTF8.self) else {
            throw fail("entry \(index + 1) has a name that is not valid UTF-8")
        }
        let shown = MessageText.name(name).debugDescription
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw fail("\(shown): control characters in entry name")
        }
        guard !name.contains("\\") else {
            throw fail("\(shown): backslash in entry name (files must be at the root of the package)")
        }
        let components = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !components.contains(where: { $0 == ".." }) else {
            throw fail("\(shown): path traversal in entry name")
        }
        guard !name.hasPrefix("/"), !(name.count >= 2 && name.dropFirst().first == ":") else {
            throw fail("\(shown): absolute path in entry name")
        }
        guard !name.hasSuffix("/") else {
            throw fail("\(shown): directory entry (files must be at the root of the package)")
        }
        guard components.count == 1, name != "." else {
            throw fail("\(shown): file in a subdirectory (files must be at the root of the package)")
        }
        return name
    }

    /// Whether an extra-field block contains a ZIP64 extended information field.
    func hasZip64Field(_ extra: Data) -> Bool {
        var offset = extra.startIndex
        while offset + 4 <= extra.endIndex {
            guard let id = data.uint16(at: offset), let length = data.uint16(at: offset + 2) else { return false }
            if id == Self.zip64ExtraFieldID { return true }
            offset += 4 + Int(length)
        }
        return false
    }

    /// Refuses archives whose entries share bytes (a zip-bomb technique).
    func checkNoOverlap(_ entries: [ZipEntry]) throws(OTAError) {
        let sorted = entries.sorted { $0.headerOffset < $1.headerOffset }
        for (previous, next) in zip(sorted, sorted.dropFirst())
        where previous.dataRange.upperBound > next.headerOffset {
            throw fail("\(previous.name) and \(next.name) overlap in the archive, refused as a possible zip bomb")
        }
    }
}

/// The fields a central directory header repeats from its entry's local header, from "version
/// needed to extract" to "extra field length" (APPNOTE.TXT 4.3.7 and 4.3.12): the one layout both
/// headers are read with, so the two can be compared field by field.
private struct ZipHeaderFields {
    /// General purpose bit flags.
    var flags: UInt16
    /// The compression method number.
    var method: UInt16
    /// CRC-32 of the uncompressed bytes.
    var crc: UInt32
    /// Compressed size.
    var compressed: UInt32
    /// Uncompressed size.
    var uncompressed: UInt32
    /// Length of the file name that follows the fixed part.
    var nameLength: UInt16
    /// Length of the extra field that follows the name.
    var extraLength: UInt16

    /// Reads the fields starting at `offset` ("version needed to extract"); nil when truncated.
    init?(_ data: Data, at offset: Int) {
        guard let flags = data.uint16(at: offset + 2), let method = data.uint16(at: offset + 4),
            let crc = data.uint32(at: offset + 10), let compressed = data.uint32(at: offset + 14),
            let uncompressed = data.uint32(at: offset + 18), let nameLength = data.uint16(at: offset + 22),
            let extraLength = data.uint16(at: offset + 24)
        else { return nil }
        (self.flags, self.method, self.crc) = (flags, method, crc)
        (self.compressed, self.uncompressed) = (compressed, uncompressed)
        (self.nameLength, self.extraLength) = (nameLength, extraLength)
    }
}

extension Data {
    /// The little-endian UInt16 at a 0-based `offset`, or nil when it is not entirely inside.
    fileprivate func uint16(at offset: Int) -> UInt16? {
        guard offset >= 0, offset <= count - 2 else { return nil }
        let base = startIndex + offset
        return UInt16(self[base]) | UInt16(self[base + 1]) << 8
    }

    /// The little-endian UInt32 at a 0-based `offset`, or nil when it is not entirely inside.
    fileprivate func uint32(at offset: Int) -> UInt32? {
        guard offset >= 0, offset <= count - 4 else { return nil }
        let base = startIndex + offset
        return UInt32(self[base]) | UInt32(self[base + 1]) << 8 | UInt32(self[base + 2]) << 16
            | UInt32(self[base + 3]) << 24
    }
}
