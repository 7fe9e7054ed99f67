import Foundation

/// Reading a firmware file (an image, a package, an init packet) from disk, with the same
/// one-line errors wherever the tool reads one.
public enum FirmwareFile {
    /// The whole file, read into memory once (never mapped: a file truncated while mapped would
    /// kill the process with SIGBUS), at most ``FirmwareImage/maximumFileSize`` bytes.
    ///
    /// - Parameter directoryProblem: what to say when `url` names a directory ("is a directory,
    ///   not a file"), after the path.
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason when the file is missing,
    ///   a directory, not a regular file (a device, a FIFO), or unreadable;
    ///   ``OTAError/Code/imageTooLarge`` above the size limit.
    public static func read(_ url: URL, directoryProblem: String) throws(OTAError) -> Data {
        let shown = MessageText.name(url.path)
        try checkIsFile(url, directoryProblem: directoryProblem)
        do {
            return try BoundedFileRead.contents(of: url, limit: FirmwareImage.maximumFileSize)
        } catch {
            switch error {
            case .unreadable: throw OTAError(.invalidImage, "\(shown): cannot be read (check its permissions)")
            case .notRegular: throw OTAError(.invalidImage, "\(shown): is not a regular file")
            case .tooLarge(let size):
                throw OTAError(
                    .imageTooLarge, "\(shown): \(size) bytes, more than the \(FirmwareImage.maximumFileSize >> 20) MiB a firmware file may have"
                )
            }
        }
    }

    /// Refuses, in the words of ``read(_:directoryProblem:)``, a path that is missing, a
    /// directory, or not a regular file.
    static func checkIsFile(_ url: URL, directoryProblem: String) throws(OTAError) {
        let path = url.path
        let shown = MessageText.name(path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw OTAError(.invalidImage, "\(shown): no such file")
        }
        guard !isDirectory.boolValue else {
            throw OTAError(.invalidImage, "\(shown): \(directoryProblem)")
        }
        if let problem = FirmwareImage.notRegularFile(path) {
            throw OTAError(.invalidImage, "\(shown): \(problem)")
        }
    }
}
