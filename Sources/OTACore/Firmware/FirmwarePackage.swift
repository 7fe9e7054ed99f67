import Foundation

/// A firmware package: a directory holding a `manifest.json` that names the target (family
/// and/or protocol), the version, the compatible hardware, and each image with its size and
/// SHA-256. The schema is in docs/manifest.md.
///
/// Opening a package verifies every image (present, a regular file inside the package reached
/// through no symbolic link, size and SHA-256 as declared) and keeps its bytes, so a bad package
/// is refused before anything connects and nothing is read from disk twice.
public struct FirmwarePackage: Sendable {
    /// One image of the package, verified.
    public struct Image: Sendable, Hashable {
        /// The file name inside the package.
        public var file: String
        /// Its size in bytes.
        public var size: Int
        /// Its SHA-256, as declared and verified.
        public var sha256: [UInt8]
        /// Where it is.
        public var url: URL
        /// Its contents, read once when the package was opened: the bytes verified are the bytes
        /// sent, whatever happens to the file afterwards.
        public var bytes: Data
    }

    /// The package's name.
    public var name: String?
    /// The firmware version.
    public var version: String?
    /// The protocol the package is made for, if it says.
    public var protocolName: String?
    /// Device families the package fits; empty means it does not restrict.
    public var families: [String]
    /// Hardware revisions the package fits; empty means it does not restrict.
    public var hardware: [String]
    /// The images, in transfer order.
    public var images: [Image]
    /// The manifest's path, for messages.
    public var source: String

    /// Creates a package description (``open(_:)`` makes verified ones from disk).
    public init(
        name: String?, version: String?, protocolName: String?, families: [String], hardware: [String], images: [Image], source: String
    ) {
        self.name = name
        self.version = version
        self.protocolName = protocolName
        self.families = families
        self.hardware = hardware
        self.images = images
        self.source = source
    }

    /// The largest package manifest read, in bytes (docs/manifest.md).
    public static let maximumManifestSize = 1 << 20

    /// The manifest file name inside a package directory.
    public static let manifestName = "manifest.json"

    /// Whether `url` is a package (a directory with a manifest that has `"package"` in it).
    public static func isPackage(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else { return false }
        return FileManager.default.fileExists(atPath: url.appendingPathComponent(manifestName).path)
    }

    /// Opens and verifies the package in directory `url`.
    ///
    /// - Throws: ``OTAError/Code/invalidManifest`` naming the file and field: malformed JSON, a
    ///   missing image, a path outside the package, a size or SHA-256 mismatch.
    public static func open(_ url: URL) throws(OTAError) -> FirmwarePackage {
        let manifestURL = url.appendingPathComponent(manifestName)
        let source = manifestURL.path
        let data = try BoundedFileRead.contents(
            of: manifestURL, limit: maximumManifestSize, code: .invalidManifest, subject: source,
            largest: "the \(maximumManifestSize) a package manifest may have")
        let root = try ManifestReader(source: source).root(data)
        try root.allowOnly(["package", "name", "version", "protocol", "families", "hardware", "images"])
        guard try root.required("package").integer(in: 1...1000) == 1 else {
            throw OTAError(.invalidManifest, "\(source): package: unsupported version (this build reads version 1)")
        }
        var package = FirmwarePackage(
            name: try root.optional("name")?.string(),
            version: try root.optional("version")?.string(),
            protocolName: try root.optional("protocol")?.nonEmptyString(),
            families: try root.optional("families")?.array().map { node throws(OTAError) in try node.nonEmptyString() } ?? [],
            hardware: try root.optional("hardware")?.array().map { node throws(OTAError) in try node.nonEmptyString() } ?? [],
            images: [],
            source: source
        )
        let imagesNode = try root.required("images")
        let nodes = try imagesNode.array()
        guard !nodes.isEmpty else { throw OTAError(.invalidManifest, "\(source): images: the package has no image") }
        for node in nodes {
            package.images.append(try verifyImage(node, in: url, source: source))
        }
        return package
    }

    private static func verifyImage(_ node: ManifestReader.Node, in directory: URL, source: String) throws(OTAError) -> Image {
        try node.allowOnly(["file", "size", "sha256"])
        let fileNode = try node.required("file")
        let file = try fileNode.nonEmptyString()
        guard !file.hasPrefix("/"), !file.split(separator: "/").contains(".."), !file.contains("\\") else {
            throw OTAError(.invalidManifest, "\(source): \(fileNode.path): '\(file)' points outside the package")
        }
        let size = try node.required("size").integer(in: 1...Int(Int32.max))
        let digestNode = try node.required("sha256")
        let declared = try digestNode.hexBytes()
        guard declared.count == 32 else {
            throw OTAError(.invalidManifest, "\(source): \(digestNode.path): expected 64 hexadecimal digits")
        }
        let url = directory.appendingPathComponent(file)
        let contents = try readRegularFile(file, in: directory, size: size, fail: { fileNode.error($0) })
        guard contents.count == size else {
            throw OTAError(.invalidManifest, "\(source): \(node.path).size: declared \(size) bytes but '\(file)' has \(contents.count)")
        }
        let actual = SHA256.hash(contents)
        guard actual == [UInt8](declared) else {
            throw OTAError(.invalidManifest, "\(source): \(digestNode.path): '\(file)' does not match its SHA-256 (corrupt or replaced file)")
        }
        return Image(file: file, size: size, sha256: actual, url: url, bytes: contents)
    }

    /// The contents of `file` (a relative path) in `directory`, at most `size` + 1 bytes: refused
    /// unless every component below `directory` is a real directory or, last, a regular file (a
    /// symbolic link could lead anywhere, a FIFO or device would block or never end).
    private static func readRegularFile(
        _ file: String, in directory: URL, size: Int, fail: (String) -> OTAError
    ) throws(OTAError) -> Data {
        let name = MessageText.name(file)
        let components = file.split(separator: "/").filter { $0 != "." }
        var path = directory.path
        for (index, component) in components.enumerated() {
            path += "/" + component
            var status = stat()
            guard lstat(path, &status) == 0 else { throw fail("'\(name)' is missing from the package") }
            let type = status.st_mode & S_IFMT
            if type == S_IFLNK { throw fail("'\(name)' is a symbolic link; images must be regular files inside the package") }
            let last = index == components.count - 1
            guard type == (last ? S_IFREG : S_IFDIR) else {
                throw fail("'\(name)' is not a regular file; images must be regular files inside the package")
            }
        }
        // O_NOFOLLOW: a link swapped in since the check is refused, not followed.
        let descriptor = Foundation.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { throw fail("'\(name)' cannot be read") }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw fail("'\(name)' is not a regular file; images must be regular files inside the package")
        }
        do {
            return try handle.read(upToCount: size + 1) ?? Data()
        } catch {
            throw fail("'\(name)' cannot be read")
        }
    }

    /// Checks that the package fits a device of `family`: its `families` list, and its
    /// `hardware` list against the family's revision when the family names one (otherwise
    /// ``hardwareCompatibility(checkedByFamily:)`` hands it to the preflight).
    ///
    /// - Throws: ``OTAError/Code/incompatible`` naming what does not fit.
    public func checkCompatibility(with family: DeviceFamily?, device: String) throws(OTAError) {
        // A hardware list with no revision to compare it with here is checked against the
        // device's Device Information hardware revision after connecting (``Preflight``).
        guard let family else {
            if !families.isEmpty {
                throw OTAError(
                    .incompatible,
                    "\(source): the package is for \(describeRestrictions) but \(device) matches no device family, so its compatibility cannot be checked"
                )
            }
            return
        }
        if !families.isEmpty, !families.contains(family.name) {
            throw OTAError(
                .incompatible,
                "\(source): families: the package is for \(families.joined(separator: ", ")), not for \(device)'s family '\(family.name)'"
            )
        }
        if !hardware.isEmpty, let revision = family.hardware {
            guard hardware.contains(revision) else {
                throw OTAError(
                    .incompatible,
                    "\(source): hardware: the package fits hardware \(hardware.joined(separator: ", ")), not \(device)'s '\(revision)'"
                )
            }
        }
    }

    /// The package's `hardware` list as a preflight declaration, compared with the device's
    /// Device Information hardware revision; `nil` when the package does not restrict hardware.
    ///
    /// - Parameter checkedByFamily: whether the catalog family named a revision (already checked
    ///   by ``checkCompatibility(with:device:)``); then a device that does not report its
    ///   revision is not refused.
    public func hardwareCompatibility(checkedByFamily: Bool) -> HardwareCompatibility? {
        guard !hardware.isEmpty else { return nil }
        return HardwareCompatibility(
            .revisions(hardware), source: "\(source) hardware",
            whenUnknown: checkedByFamily ? .note("the catalog family's revision matched") : .refuse
        )
    }

    private var describeRestrictions: String {
        var parts: [String] = []
        if !families.isEmpty { parts.append("families " + families.joined(separator: ", ")) }
        if !hardware.isEmpty { parts.append("hardware " + hardware.joined(separator: ", ")) }
        return parts.joined(separator: " and ")
    }

    /// Where the one image of the package is, for protocols that send a single file.
    ///
    /// - Throws: ``OTAError/Code/invalidManifest`` when the package holds more than one.
    public func singleImageURL() throws(OTAError) -> URL {
        try singleImage().url
    }

    /// The one image of the package, verified, for protocols that send a single file.
    ///
    /// - Throws: ``OTAError/Code/invalidManifest`` when the package holds more than one.
    public func singleImage() throws(OTAError) -> Image {
        guard images.count == 1, let image = images.first else {
            throw OTAError(.invalidManifest, "\(source): images: the package has \(images.count) images, but this protocol sends one file")
        }
        return image
    }
}
