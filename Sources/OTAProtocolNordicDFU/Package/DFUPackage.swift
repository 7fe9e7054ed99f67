import Foundation
import OTACore

/// A Nordic Secure DFU package, opened and checked before any connection is made.
///
/// A package is either a `.zip` made by `nrfutil pkg generate` (a `manifest.json`, and a `.bin`
/// image with a `.dat` init packet per part), or a plain `.bin` + `.dat` pair. ``parts`` lists
/// the firmware in transfer order: the SoftDevice and/or bootloader part first, then the
/// application.
///
/// Opening a package refuses anything a bootloader would refuse later: an invalid combination
/// of parts, a missing file or init packet, an image whose size or SHA-256 does not match its
/// init packet. Every refusal is an ``OTAError`` with code ``OTAError/Code/invalidImage`` and a
/// one-line message naming the file and the field:
///
/// ```text
/// app.zip: app.dat: app_size is 1024 but app.bin has 1020 bytes
/// ```
///
/// To see what is inside a package, consistent or not, use ``inspect(contentsOf:)``.
public struct DFUPackage: Sendable {
    /// The package name used in messages: the zip file name, or "app.bin + app.dat" for a pair.
    public let name: String
    /// The manifest, for a zip package.
    public let manifest: DFUManifest?
    /// The firmware parts in transfer order.
    public let parts: [DFUPackagePart]
    /// Things worth knowing that do not stop an update (an unsigned bootloader, a large init
    /// packet); one line each.
    public let warnings: [String]

    /// The largest init packet accepted; bootloaders take at most a few hundred bytes.
    static let maxInitPacketSize = 64 << 10

    /// Opens a Nordic DFU `.zip` package from a file.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason when the package cannot
    ///   be used.
    public init(contentsOf url: URL) throws(OTAError) {
        try self.init(checking: Self.inspect(contentsOf: url))
    }

    /// Opens a Nordic DFU `.zip` package held in memory.
    ///
    /// - Parameters:
    ///   - zipData: The archive bytes.
    ///   - name: The archive's name for messages ("app.zip").
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason when the package cannot
    ///   be used.
    public init(zipData: Data, name: String) throws(OTAError) {
        try self.init(checking: Self.inspect(zipData: zipData, name: name))
    }

    /// Opens a plain image and its init packet.
    ///
    /// The part's kind comes from the init packet's `type`.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason when either file cannot
    ///   be read or they do not match.
    public init(binary: URL, initPacket: URL) throws(OTAError) {
        try self.init(checking: Self.inspect(binary: binary, initPacket: initPacket))
    }

    /// Opens a plain image and its init packet held in memory.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason when they cannot be used.
    public init(binary: Data, binaryName: String, initPacket: Data, initPacketName: String) throws(OTAError) {
        try self.init(
            checking: Self.inspect(
                binary: binary, binaryName: binaryName, initPacket: initPacket, initPacketName: initPacketName
            )
        )
    }

    /// Accepts an inspection without problems.
    init(checking inspection: DFUPackageInspection) throws(OTAError) {
        if let problem = inspection.problems.first {
            throw OTAError(.invalidImage, problem)
        }
        name = inspection.name
        manifest = inspection.manifest
        parts = inspection.parts
        warnings = inspection.warnings
    }

    /// The images to send, in transfer order, each carrying its init packet as the attachment
    /// ``DFUPackagePart/initPacketAttachment``.
    public var images: [FirmwareImage] {
        parts.map(\.image)
    }

    /// The application part, if the package has one.
    public var application: DFUPackagePart? {
        parts.first { $0.kind == .application }
    }

    // MARK: - Inspection

    /// Reads a `.zip` package and reports what is inside and whether it is consistent.
    ///
    /// Unlike ``init(contentsOf:)``, an inconsistent package (wrong size, wrong hash, invalid
    /// combination of parts) is described rather than refused: see
    /// ``DFUPackageInspection/problems``.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when the package cannot be read at all (not a
    ///   zip, no manifest, a missing file, a malformed init packet).
    public static func inspect(contentsOf url: URL) throws(OTAError) -> DFUPackageInspection {
        let data = try FirmwareFile.read(url, directoryProblem: "is a directory, not a file")
        return try inspect(zipData: data, name: url.lastPathComponent)
    }

    /// Reads a `.zip` package held in memory and reports what is inside and whether it is
    /// consistent.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when the package cannot be read at all.
    public static func inspect(zipData: Data, name: String) throws(OTAError) -> DFUPackageInspection {
        let archive = try ZipArchive(data: zipData, name: name)
        let manifestName = "manifest.json"
        guard archive.entry(named: manifestName) != nil else {
            throw OTAError(.invalidImage, "\(name): manifest.json is missing (is this a Nordic DFU package?)")
        }
        let manifestJSON = try archive.contents(named: manifestName, atMost: DFUManifest.maxSize, what: "a manifest")
        let manifest = try DFUManifest(json: manifestJSON, name: "\(name): \(manifestName)")

        var parts: [DFUPackagePart] = []
        var referenced: Set<String> = [manifestName]
        for (kind, entry) in manifest.parts {
            guard let datFile = entry.datFile else {
                throw OTAError(.invalidImage, "\(name): manifest.json: \(kind) has no dat_file (Secure DFU needs an init packet)")
            }
            for (key, file) in [("bin_file", entry.binFile), ("dat_file", datFile)] where archive.entry(named: file) == nil {
                throw OTAError(.invalidImage, "\(name): manifest.json: \(kind).\(key) \(MessageText.name(file).debugDescription) is not in the archive")
            }
            referenced.formUnion([entry.binFile, datFile])
            let part = try makePart(
                kind: kind,
                binary: archive.contents(named: entry.binFile), binaryName: entry.binFile,
                initPacket: archive.contents(named: datFile, atMost: maxInitPacketSize, what: "an init packet"), initPacketName: datFile,
                prefix: "\(name): ", manifestSDSize: entry.sdSize, manifestBLSize: entry.blSize
            )
            parts.append(part)
        }
        let unreferenced = archive.entries.map(\.name).filter { !referenced.contains($0) }
        let notes = unreferenced.map { "\(name): \(MessageText.name($0)) is not referenced by manifest.json and will not be sent" }
        return DFUPackageInspection(name: name, prefix: "\(name): ", manifest: manifest, parts: parts, notes: notes)
    }

    /// Reads a plain image and its init packet and reports whether they are consistent.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when a file cannot be read or the init packet is
    ///   malformed.
    public static func inspect(binary: URL, initPacket: URL) throws(OTAError) -> DFUPackageInspection {
        let binaryData = try FirmwareFile.read(binary, directoryProblem: "is a directory, not a file")
        let initPacketData = try FirmwareFile.read(initPacket, directoryProblem: "is a directory, not a file")
        return try inspect(
            binary: binaryData, binaryName: binary.lastPathComponent,
            initPacket: initPacketData, initPacketName: initPacket.lastPathComponent
        )
    }

    /// Reads a plain image and its init packet held in memory and reports whether they are
    /// consistent.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when the image is empty or the init packet is
    ///   malformed.
    public static func inspect(
        binary: Data,
        binaryName: String,
        initPacket: Data,
        initPacketName: String
    ) throws(OTAError) -> DFUPackageInspection {
        let packet = try decodeInitPacket(initPacket, name: initPacketName, prefix: "")
        guard let type = packet.command?.type else {
            throw OTAError(.invalidImage, "\(initPacketName): type is missing, so what \(binaryName) holds is unknown")
        }
        guard let kind = DFUPackagePart.Kind(type) else {
            throw OTAError(.invalidImage, "\(initPacketName): type is \(type), not a firmware type Secure DFU knows")
        }
        let part = try makePart(
            kind: kind, binary: binary, binaryName: binaryName, initPacket: initPacket,
            initPacketName: initPacketName, prefix: "", manifestSDSize: nil, manifestBLSize: nil
        )
        return DFUPackageInspection(
            name: "\(binaryName) + \(initPacketName)", prefix: "", manifest: nil, parts: [part], notes: []
        )
    }

    /// Builds one part from its two files; `prefix` ("app.zip: " or "") starts every message.
    private static func makePart(
        kind: DFUPackagePart.Kind,
        binary: Data,
        binaryName: String,
        initPacket: Data,
        initPacketName: String,
        prefix: String,
        manifestSDSize: Int?,
        manifestBLSize: Int?
    ) throws(OTAError) -> DFUPackagePart {
        guard !binary.isEmpty else {
            throw OTAError(.invalidImage, "\(prefix)\(binaryName): image is empty")
        }
        let image: FirmwareImage
        do {
            image = try FirmwareImage(bytes: binary, name: binaryName)
        } catch {
            throw OTAError(.invalidImage, "\(prefix)\(error.message)")
        }
        let packet = try decodeInitPacket(initPacket, name: initPacketName, prefix: prefix)
        return DFUPackagePart(
            kind: kind, image: image, initPacket: packet, manifestSDSize: manifestSDSize, manifestBLSize: manifestBLSize
        )
    }

    /// Decodes an init packet, prefixing errors with the package name.
    private static func decodeInitPacket(_ bytes: Data, name: String, prefix: String) throws(OTAError) -> InitPacket {
        guard bytes.count <= maxInitPacketSize else {
            throw OTAError(.invalidImage, "\(prefix)\(name): \(bytes.count) bytes is too large for an init packet")
        }
        do {
            return try InitPacket(bytes: bytes, name: name)
        } catch {
            throw OTAError(.invalidImage, "\(prefix)\(error.message)")
        }
    }
}
