import CZlib
import Foundation
import OTACore

/// One file for ``makeZip(_:comment:)``, with knobs to make the archive lie about it.
struct TestZipFile {
    var name: String
    var contents: Data
    var deflate = false
    /// General-purpose flags written to both headers (bit 0 = encrypted).
    var flags: UInt16 = 0
    /// Method number written to both headers instead of 0 or 8.
    var methodOverride: UInt16?
    /// Uncompressed size written to both headers instead of the real one.
    var declaredSize: UInt32?
    /// Compressed size written to both headers instead of the real one.
    var declaredCompressedSize: UInt32?
    /// CRC-32 written to both headers instead of the real one.
    var crcOverride: UInt32?
    /// Name written to the local header instead of `name`.
    var localName: String?
    /// Local header CRC instead of the central one.
    var localCRCOverride: UInt32?
    /// Extra field for both headers.
    var extra = Data()

    init(_ name: String, _ contents: Data, deflate: Bool = false) {
        self.name = name
        self.contents = contents
        self.deflate = deflate
    }

    init(_ name: String, _ text: String, deflate: Bool = false) {
        self.init(name, Data(text.utf8), deflate: deflate)
    }
}

/// Knobs for the end of central directory record.
struct TestZipEnd {
    var diskNumber: UInt16 = 0
    var entryCountOverride: UInt16?
    var directoryOffsetOverride: UInt32?
    var comment = Data()
    /// Writes a ZIP64 end of central directory locator before the record.
    var zip64Locator = false
}

/// A tiny zip writer for tests: stored or raw-deflate entries, with ways to lie.
func makeZip(_ files: [TestZipFile], end: TestZipEnd = TestZipEnd()) -> Data {
    var archive = Data()
    var directory = Data()
    for file in files {
        let compressed = file.deflate ? rawDeflate(file.contents) : file.contents
        let method: UInt16 = file.methodOverride ?? (file.deflate ? 8 : 0)
        let crc = file.crcOverride ?? CRC32.checksum(file.contents)
        let size = file.declaredSize ?? UInt32(file.contents.count)
        let compressedSize = file.declaredCompressedSize ?? UInt32(compressed.count)
        let localOffset = UInt32(archive.count)
        let localName = Data((file.localName ?? file.name).utf8)
        let name = Data(file.name.utf8)

        archive.appendLE(UInt32(0x0403_4b50))
        archive.appendLE(UInt16(20))  // version needed
        archive.appendLE(file.flags)
        archive.appendLE(method)
        archive.appendLE(UInt16(0))  // time
        archive.appendLE(UInt16(0x21))  // date
        archive.appendLE(file.localCRCOverride ?? crc)
        archive.appendLE(compressedSize)
        archive.appendLE(size)
        archive.appendLE(UInt16(localName.count))
        archive.appendLE(UInt16(file.extra.count))
        archive.append(localName)
        archive.append(file.extra)
        archive.append(compressed)

        directory.appendLE(UInt32(0x0201_4b50))
        directory.appendLE(UInt16(0x031E))  // made by: Unix, 3.0
        directory.appendLE(UInt16(20))
        directory.appendLE(file.flags)
        directory.appendLE(method)
        directory.appendLE(UInt16(0))
        directory.appendLE(UInt16(0x21))
        directory.appendLE(crc)
        directory.appendLE(compressedSize)
        directory.appendLE(size)
        directory.appendLE(UInt16(name.count))
        directory.appendLE(UInt16(file.extra.count))
        directory.appendLE(UInt16(0))  // comment length
        directory.appendLE(UInt16(0))  // disk start
        directory.appendLE(UInt16(0))  // internal attributes
        directory.appendLE(UInt32(0o100644) << 16)  // external attributes
        directory.appendLE(localOffset)
        directory.append(name)
        directory.append(file.extra)
    }
    let directoryOffset = UInt32(archive.count)
    archive.append(directory)
    if end.zip64Locator {
        archive.appendLE(UInt32(0x0706_4b50))
        archive.appendLE(UInt32(0))
        archive.appendLE(UInt64(0))
        archive.appendLE(UInt32(1))
    }
    let count = end.entryCountOverride ?? UInt16(files.count)
    archive.appendLE(UInt32(0x0605_4b50))
    archive.appendLE(end.diskNumber)
    archive.appendLE(end.diskNumber)
    archive.appendLE(count)
    archive.appendLE(count)
    archive.appendLE(UInt32(directory.count))
    archive.appendLE(end.directoryOffsetOverride ?? directoryOffset)
    archive.appendLE(UInt16(end.comment.count))
    archive.append(end.comment)
    return archive
}

/// Raw deflate (no zlib header), as zip method 8 stores it.
func rawDeflate(_ input: Data) -> Data {
    var stream = z_stream()
    let status = deflateInit2_(
        &stream, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
        Int32(MemoryLayout<z_stream>.size)
    )
    precondition(status == Z_OK, "deflateInit2_ failed: \(status)")
    defer { deflateEnd(&stream) }
    var source = [UInt8](input)
    var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(source.count))) + 16)
    let produced = source.withUnsafeMutableBufferPointer { inBuffer in
        output.withUnsafeMutableBufferPointer { outBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = uInt(inBuffer.count)
            stream.next_out = outBuffer.baseAddress
            stream.avail_out = uInt(outBuffer.count)
            let result = deflate(&stream, Z_FINISH)
            precondition(result == Z_STREAM_END, "deflate did not finish: \(result)")
            return outBuffer.count - Int(stream.avail_out)
        }
    }
    return Data(output[0..<produced])
}

extension Data {
    mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}
