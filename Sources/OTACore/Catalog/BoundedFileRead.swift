import Foundation

/// Reads a file from outside (a manifest, a catalog, a firmware file): only a regular file (a FIFO or device would block or
/// never end), and never more than a cap.
public enum BoundedFileRead {
    public enum Failure: Error, Sendable {
        /// Missing or unreadable.
        case unreadable
        /// A FIFO, device, socket or directory.
        case notRegular
        /// Larger than the cap; the file's size.
        case tooLarge(Int)
    }

    /// The contents of the regular file at `url` (symbolic links followed), at most `limit` bytes.
    public static func contents(of url: URL, limit: Int) throws(Failure) -> Data {
        var status = stat()
        guard stat(url.path, &status) == 0 else { throw .unreadable }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegular }
        guard Int(status.st_size) <= limit else { throw .tooLarge(Int(status.st_size)) }
        let descriptor = open(url.path, O_RDONLY | O_NONBLOCK)
        guard descriptor >= 0 else { throw .unreadable }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var opened = stat()
        guard fstat(descriptor, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG else { throw .notRegular }
        let data: Data
        do {
            // One byte past the cap, so a file that grew since stat is still refused.
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw .unreadable
        }
        guard data.count <= limit else { throw .tooLarge(data.count) }
        return data
    }
}

extension BoundedFileRead {
    /// ``contents(of:limit:)``, its failures as one ``OTAError`` of `code` each, so that every
    /// file the tool reads from outside is refused in the same words. The message begins with
    /// `subject`, how messages name the file (its path, "trace run.jsonl"), then says what is
    /// wrong: "cannot be read (does it exist?)"; why it is not a regular file ("is a FIFO, not a
    /// regular file"); or "N bytes, more than " and `largest` ("the 1048576 a catalog may have").
    public static func contents(of url: URL, limit: Int, code: OTAError.Code, subject: String, largest: String) throws(OTAError) -> Data {
        do {
            return try contents(of: url, limit: limit)
        } catch {
            switch error {
            case .unreadable: throw OTAError(code, "\(subject): cannot be read (does it exist?)")
            case .notRegular: throw OTAError(code, "\(subject): \(FirmwareImage.notRegularFile(url.path) ?? "is not a regular file")")
            case .tooLarge(let size): throw OTAError(code, "\(subject): \(size) bytes, more than \(largest)")
            }
        }
    }
}
