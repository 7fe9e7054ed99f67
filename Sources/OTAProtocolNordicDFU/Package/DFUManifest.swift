import Foundation
import OTACore

/// The `manifest.json` of a Nordic DFU package: which firmware parts the package holds and which
/// files carry them.
///
/// ```json
/// {"manifest": {"application": {"bin_file": "app.bin", "dat_file": "app.dat"}}}
/// ```
///
/// Unknown keys (such as the legacy `dfu_version` and `init_packet_data`) are ignored, as
/// Nordic's own clients do. Whether the combination of parts is valid is checked by
/// ``DFUPackage``, not here, so that an inspection can still show an invalid package.
public struct DFUManifest: Sendable, Hashable {
    /// One firmware part as the manifest describes it.
    public struct Entry: Sendable, Hashable {
        /// The image file (`bin_file`).
        public var binFile: String
        /// The init packet file (`dat_file`); required for Secure DFU.
        public var datFile: String?
        /// The SoftDevice size from `info_read_only_metadata` (or the entry itself), informative.
        public var sdSize: Int?
        /// The bootloader size from `info_read_only_metadata` (or the entry itself), informative.
        public var blSize: Int?

        /// Creates an entry.
        public init(binFile: String, datFile: String?, sdSize: Int? = nil, blSize: Int? = nil) {
            self.binFile = binFile
            self.datFile = datFile
            self.sdSize = sdSize
            self.blSize = blSize
        }
    }

    /// The `application` part.
    public var application: Entry?
    /// The `bootloader` part.
    public var bootloader: Entry?
    /// The `softdevice` part.
    public var softdevice: Entry?
    /// The `softdevice_bootloader` part.
    public var softdeviceBootloader: Entry?

    /// The largest manifest accepted; real ones are a few hundred bytes.
    static let maxSize = 1 << 20

    /// Creates a manifest from its parts.
    public init(
        application: Entry? = nil,
        bootloader: Entry? = nil,
        softdevice: Entry? = nil,
        softdeviceBootloader: Entry? = nil
    ) {
        self.application = application
        self.bootloader = bootloader
        self.softdevice = softdevice
        self.softdeviceBootloader = softdeviceBootloader
    }

    /// Parses `manifest.json`.
    ///
    /// - Parameters:
    ///   - json: The file contents.
    ///   - name: How to name the file in messages, for example "app.zip: manifest.json".
    /// - Throws: ``OTAError/Code/invalidImage`` with a one-line reason naming the key at fault.
    public init(json: Data, name: String = "manifest.json") throws(OTAError) {
        guard json.count <= Self.maxSize else {
            throw OTAError(.invalidImage, "\(name): \(json.count) bytes is too large for a manifest")
        }
        let file: ManifestFile
        do {
            file = try JSONDecoder().decode(ManifestFile.self, from: json)
        } catch let error as DecodingError {
            throw OTAError(.invalidImage, "\(name): \(Self.describe(error))")
        } catch let error as OTAError {
            throw OTAError(.invalidImage, "\(name): \(error.message)")
        } catch {
            throw OTAError(.invalidImage, "\(name): not valid JSON")
        }
        self = file.manifest.manifest
    }

    /// The parts present, in transfer order: the system part (SoftDevice, bootloader or both)
    /// first, the application last.
    public var parts: [(kind: DFUPackagePart.Kind, entry: Entry)] {
        var parts: [(kind: DFUPackagePart.Kind, entry: Entry)] = []
        if let softdeviceBootloader { parts.append((.softdeviceBootloader, softdeviceBootloader)) }
        if let softdevice { parts.append((.softdevice, softdevice)) }
        if let bootloader { parts.append((.bootloader, bootloader)) }
        if let application { parts.append((.application, application)) }
        return parts
    }

    /// A one-line description of a decoding failure, naming the JSON path.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = (codingPath + (last.map { [$0] } ?? [])).map { key in
                key.intValue.map { "[\($0)]" } ?? key.stringValue
            }
            return keys.isEmpty ? "the top level" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath, key)) is missing"
        case .typeMismatch(let type, let context):
            let expected = type == String.self ? "a string" : type == Int.self ? "an integer" : "an object"
            return "\(path(context.codingPath)) should be \(expected)"
        case .valueNotFound(_, let context):
            return "\(path(context.codingPath)) is null"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "not valid JSON" }
            return "\(path(context.codingPath)) has an invalid value"
        @unknown default:
            return "not a valid manifest"
        }
    }
}

// MARK: - JSON shape

/// `{"manifest": {...}}`.
private struct ManifestFile: Decodable {
    var manifest: ManifestBody
}

/// The object under `"manifest"`.
private struct ManifestBody: Decodable {
    var manifest: DFUManifest

    enum CodingKeys: String, CodingKey {
        case application, bootloader, softdevice
        case softdeviceBootloader = "softdevice_bootloader"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func entry(_ key: CodingKeys) throws -> DFUManifest.Entry? {
            try container.decodeIfPresent(ManifestEntry.self, forKey: key)?.entry
        }
        manifest = DFUManifest(
            application: try entry(.application),
            bootloader: try entry(.bootloader),
            softdevice: try entry(.softdevice),
            softdeviceBootloader: try entry(.softdeviceBootloader)
        )
    }
}

/// One part entry: `bin_file`, `dat_file` and the optional size metadata.
private struct ManifestEntry: Decodable {
    var entry: DFUManifest.Entry

    enum CodingKeys: String, CodingKey {
        case binFile = "bin_file"
        case datFile = "dat_file"
        case metadata = "info_read_only_metadata"
        case sdSize = "sd_size"
        case blSize = "bl_size"
    }

    struct Metadata: Decodable {
        var sdSize: Int?
        var blSize: Int?

        enum CodingKeys: String, CodingKey {
            case sdSize = "sd_size"
            case blSize = "bl_size"
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let metadata = try container.decodeIfPresent(Metadata.self, forKey: .metadata)
        let sdSize = try metadata?.sdSize ?? container.decodeIfPresent(Int.self, forKey: .sdSize)
        let blSize = try metadata?.blSize ?? container.decodeIfPresent(Int.self, forKey: .blSize)
        for (size, key) in [(sdSize, "sd_size"), (blSize, "bl_size")] {
            if let size, size < 0 || size > Int(UInt32.max) {
                let location = (container.codingPath.map(\.stringValue) + [key]).joined(separator: ".")
                throw OTAError(.invalidImage, "\(location) is \(size), not a size in bytes")
            }
        }
        entry = DFUManifest.Entry(
            binFile: try container.decode(String.self, forKey: .binFile),
            datFile: try container.decodeIfPresent(String.self, forKey: .datFile),
            sdSize: sdSize,
            blSize: blSize
        )
    }
}
