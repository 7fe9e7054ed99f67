import CZlib
import Foundation
import OTACore

extension ZipArchive {
    /// The extracted bytes of the entry called `name`.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when there is no such entry, or as
    ///   ``contents(of:)`` does.
    public func contents(named name: String) throws(OTAError) -> Data {
        guard let entry = entry(named: name) else {
            throw OTAError(.invalidImage, "\(self.name): \(name) is not in the archive")
        }
        return try contents(of: entry)
    }

    /// The extracted bytes of the entry called `name`, refused before anything is inflated when
    /// it declares more than `limit` bytes (and, as always, as soon as it inflates past what it
    /// declares): `what` says what the entry is ("a manifest").
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` as ``contents(named:)``, or for the size.
    public func contents(named name: String, atMost limit: Int, what: String) throws(OTAError) -> Data {
        guard let entry = entry(named: name) else {
            throw OTAError(.invalidImage, "\(self.name): \(MessageText.name(name)) is not in the archive")
        }
        guard entry.uncompressedSize <= limit else {
            throw OTAError(
                .invalidImage,
                "\(self.name): \(MessageText.name(name)): declares \(entry.uncompressedSize) bytes, more than the \(PackageText.megabytes(limit)) \(what) may have"
            )
        }
        return try contents(of: entry)
    }

    /// The extracted bytes of an entry, verified against its declared size and CRC-32.
    ///
    /// Deflated entries are inflated into a buffer of the declared size plus one byte: an entry
    /// that inflates past its declared size is refused as soon as that extra byte is produced,
    /// so memory never grows beyond what the (already capped) declared size allows.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` naming the archive and the entry when the data
    ///   is corrupt, has the wrong size, or fails its CRC check.
    public func contents(of entry: ZipEntry) throws(OTAError) -> Data {
        let range = entry.dataRange
        guard range.lowerBound >= 0, range.upperBound <= data.count else {
            throw OTAError(.invalidImage, "\(name): \(MessageText.name(entry.name)): data lies outside the archive")
        }
        let bytes: Data
        switch entry.method {
        case .stored:
            bytes = Data(data[range])
        case .deflate:
            bytes = try inflate(entry)
        default:
            throw OTAError(.invalidImage, "\(name): \(MessageText.name(entry.name)): unsupported compression method \(entry.method.rawValue)")
        }
        guard bytes.count == entry.uncompressedSize else {
            throw OTAError(
                .invalidImage, "\(name): \(MessageText.name(entry.name)): holds \(bytes.count) bytes but the archive declares \(entry.uncompressedSize)")
        }
        let crc = CRC32.checksum(bytes)
        guard crc == entry.crc32 else {
            throw OTAError(
                .invalidImage,
                "\(name): \(MessageText.name(entry.name)): CRC-32 mismatch (archive says \(Hex.number(entry.crc32, digits: 8)), contents give \(Hex.number(crc, digits: 8)))"
            )
        }
        return bytes
    }

    /// Inflates a raw-deflate entry, producing at most its declared size + 1 bytes.
    private func inflate(_ entry: ZipEntry) throws(OTAError) -> Data {
        let prefix = "\(name): \(MessageText.name(entry.name))"
        guard entry.uncompressedSize <= limits.maxEntrySize else {
            throw OTAError(
                .invalidImage, "\(prefix): declares \(entry.uncompressedSize) bytes, more than the \(PackageText.megabytes(limits.maxEntrySize)) limit")
        }
        let capacity = entry.uncompressedSize + 1
        var output = Data(count: capacity)
        let outcome: InflateOutcome = data.withUnsafeBytes { archive in
            let input = UnsafeRawBufferPointer(rebasing: archive[entry.dataRange])
            return output.withUnsafeMutableBytes { out in
                rawInflate(input, into: out)
            }
        }
        switch outcome {
        case .finished(let produced) where produced <= entry.uncompressedSize:
            output.count = produced
            return output
        case .finished, .outputFull:
            throw OTAError(.invalidImage, "\(prefix): inflates past its declared size of \(entry.uncompressedSize) bytes")
        case .truncated:
            throw OTAError(.invalidImage, "\(prefix): deflate data is truncated")
        case .corrupt(let reason):
            throw OTAError(.invalidImage, "\(prefix): deflate data is corrupt (\(reason))")
        case .failed(let code):
            throw OTAError(.internal, "\(prefix): zlib failed with code \(code)")
        }
    }
}

/// What a bounded inflate produced.
private enum InflateOutcome {
    /// The deflate stream ended after producing this many bytes.
    case finished(Int)
    /// The output buffer filled before the stream ended.
    case outputFull
    /// The input ran out before the stream ended.
    case truncated
    /// The stream is not valid deflate.
    case corrupt(String)
    /// zlib itself failed (out of memory, version mismatch).
    case failed(Int32)
}

/// Inflates raw deflate (no zlib or gzip header) from `input` into `output`, never writing more
/// than `output.count` bytes.
private func rawInflate(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> InflateOutcome {
    guard input.count <= Int(UInt32.max), output.count <= Int(UInt32.max) else { return .failed(Z_BUF_ERROR) }
    guard let outBase = output.baseAddress else { return .outputFull }
    var stream = z_stream()
    // `inflateInit2` is a macro that Swift cannot see; this is what it expands to.
    let initStatus = inflateInit2_(&stream, -MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
    guard initStatus == Z_OK else { return .failed(initStatus) }
    defer { inflateEnd(&stream) }

    // An empty input still needs a valid (non-nil) pointer for zlib.
    var empty: UInt8 = 0
    return withUnsafeMutablePointer(to: &empty) { emptyPointer in
        let inBase = input.baseAddress.map { UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self)) }
        stream.next_in = inBase ?? emptyPointer
        stream.avail_in = uInt(input.count)
        stream.next_out = outBase.assumingMemoryBound(to: Bytef.self)
        stream.avail_out = uInt(output.count)
        while true {
            let status = CZlib.inflate(&stream, Z_NO_FLUSH)
            let produced = output.count - Int(stream.avail_out)
            switch status {
            case Z_STREAM_END:
                return .finished(produced)
            case Z_OK, Z_BUF_ERROR:
                if stream.avail_out == 0 { return .outputFull }
                if stream.avail_in == 0 { return .truncated }
                if status == Z_BUF_ERROR { return .truncated }
            case Z_DATA_ERROR, Z_NEED_DICT:
                let reason = stream.msg.map { String(cString: $0) } ?? "invalid data"
                return .corrupt(reason)
            default:
                return .failed(status)
            }
        }
    }
}
