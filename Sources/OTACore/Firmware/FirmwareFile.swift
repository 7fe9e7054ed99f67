import Foundation

/// Reading a firmware file (an image, a package, an init packet) from disk, with the same
/// one-line errors wherever the tool reads one.
public enum FirmwareFile {
    /// The whole file, memory-mapped where the platform allows it.
    ///
    /// - Parameter directoryProblem: what to say when `url` names a directory ("is a directory,
    ///   not a file"), after the path.
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason when the file is missing,
    ///   a directory, not a regular file (a device, a FIFO), or unreadable.
    public static func read(_ url: URL, directoryProblem: String) throws(OTAError) -> Data {
        let path = url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw OTAError(.invalidImage, "\(path): no such file")
        }
        guard !isDirectory.boolValue else {
            throw OTAError(.invalidImage, "\(path): \(directoryProblem)")
        }
        if let problem = FirmwareImage.notRegularFile(path) {
            throw OTAError(.invalidImage, "\(path): \(problem)")
        }
        do {
            return try Data(contentsOf: url, options: .alwaysMapped)
        } catch {
            throw OTAError(.invalidImage, "\(path): cannot be read (check its permissions)", underlying: SendableErrorBox(error))
        }
    }
}
