import Foundation
import OTACore

/// An MCUboot image as `imgtool` writes it, read and checked before anything is sent:
/// header, body, protected TLVs (`0x6908`), unprotected TLVs (`0x6907`) and, for a padded image,
/// the slot padding and trailer after them.
///
/// Two digests, kept apart on purpose: ``hash`` is the SHA-256 TLV — the digest of header, body
/// and protected TLVs, which MCUboot checks and image state reports as `hash` — and
/// ``fileSHA256`` is the digest of the whole file, which an upload's first request carries as
/// `sha` so a device can recognise (and resume) the same upload.
public struct MCUbootImage: Sendable, Hashable {
    /// The header's fields.
    public var header: MCUbootImageHeader
    /// The protected TLVs (covered by the hash and any signature), in file order.
    public var protectedTLVs: [MCUbootTLV]
    /// The unprotected TLVs (hash, key hash, signatures), in file order.
    public var tlvs: [MCUbootTLV]
    /// The SHA-256 TLV's value, checked against the digest computed here.
    public var hash: Data
    /// SHA-256 of the whole file.
    public var fileSHA256: Data
    /// Bytes from the start of the header to the end of the unprotected TLV area.
    public var imageLength: Int
    /// Bytes in the file, which for an image padded to its slot include padding and a trailer.
    public var fileLength: Int

    /// The image version.
    public var version: MCUbootVersion { header.version }

    /// The bytes of the file from `start` on (its TLV areas), with the file's length: offsets are
    /// the file's, and reading past what was read answers nothing.
    private struct Tail {
        let start: Int
        let bytes: [UInt8]
        let fileLength: Int

        func u16(_ offset: Int) -> UInt16? {
            guard offset >= start, offset + 2 <= start + bytes.count else { return nil }
            return UInt16(bytes[offset - start]) | UInt16(bytes[offset - start + 1]) << 8
        }

        subscript(range: Range<Int>) -> Data { Data(bytes[(range.lowerBound - start)..<(range.upperBound - start)]) }
    }

    /// Reads and checks an image in memory: magic, header size, that the areas fit in the file,
    /// each TLV inside its area, exactly one SHA-256 TLV, and that it matches the digest.
    public init(parsing data: Data) throws(MCUbootImageError) {
        // The one empty input a FirmwareImage refuses is too short for the header.
        guard let image = try? FirmwareImage(bytes: data) else { throw .truncated("0 bytes are shorter than the 32-byte image header") }
        try self.init(reading: image)
    }

    /// Reads and checks an image as ``init(parsing:)`` does, reading only its header and TLV
    /// areas and hashing the rest window by window (an image in a file is never held whole).
    ///
    /// - Throws: ``MCUbootImageError/unreadable(_:)`` (its one line) when the image's file changed
    ///   or cannot be read; the other cases as ``init(parsing:)``.
    public init(reading image: FirmwareImage) throws(MCUbootImageError) {
        func read(_ range: Range<Int>) throws(MCUbootImageError) -> [UInt8] {
            do { return [UInt8](try image[range]) } catch { throw .unreadable(error.message) }
        }
        let fileLength = image.count
        let header = try MCUbootImageHeader(try read(0..<min(fileLength, MCUbootImageHeader.length)))
        let bodyEnd = Int(header.headerSize) + Int(header.imageSize)
        guard bodyEnd <= fileLength else {
            throw .truncated("the header declares \(bodyEnd) bytes of header and body but the file has \(fileLength)")
        }
        // The protected area, then an unprotected area of at most 65535 bytes (its size is a u16).
        let tail = Tail(
            start: bodyEnd, bytes: try read(bodyEnd..<min(fileLength, bodyEnd + Int(header.protectedTLVSize) + 0xFFFF)), fileLength: fileLength
        )
        var offset = bodyEnd
        var protectedTLVs: [MCUbootTLV] = []
        if header.protectedTLVSize > 0 {
            protectedTLVs = try Self.tlvArea(tail, at: offset, magic: MCUbootTLV.protectedAreaMagic, declaredSize: Int(header.protectedTLVSize))
            offset += Int(header.protectedTLVSize)
        }
        let hashedLength = offset
        guard let areaSize = tail.u16(offset + 2), tail.u16(offset) == MCUbootTLV.areaMagic else {
            throw .missingTLVArea(offset: offset)
        }
        let tlvs = try Self.tlvArea(tail, at: offset, magic: MCUbootTLV.areaMagic, declaredSize: Int(areaSize))
        offset += Int(areaSize)

        let hashes = tlvs.filter { $0.type == .sha256 }
        guard !hashes.isEmpty else { throw .noHash }
        guard hashes.count == 1 else { throw .multipleHashes(hashes.count) }
        guard hashes[0].value.count == SHA256.digestByteCount else { throw .badHashLength(hashes[0].value.count) }
        // The hash TLV's digest (header and body) and the file's, in one pass over the image.
        let digests: (prefix: Data, whole: Data)
        do { digests = try image.sha256(ofPrefix: hashedLength) } catch { throw .unreadable(error.message) }
        let computed = digests.prefix
        guard computed == hashes[0].value else { throw .hashMismatch(declared: hashes[0].value, computed: computed) }

        self.header = header
        self.protectedTLVs = protectedTLVs
        self.tlvs = tlvs
        self.hash = computed
        self.fileSHA256 = digests.whole
        self.imageLength = offset
        self.fileLength = fileLength
    }

    /// The security counter, when a protected TLV carries one.
    public var securityCounter: UInt32? {
        guard let value = protectedTLVs.first(where: { $0.type == .securityCounter })?.value, value.count == 4 else { return nil }
        return value.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// What `ota inspect` shows: version, sizes, flags, both digests and every TLV.
    public var report: String {
        func list(_ tlvs: [MCUbootTLV]) -> String {
            tlvs.isEmpty ? "none" : tlvs.map { "\($0.type.meaning) (\($0.value.count) bytes)" }.joined(separator: ", ")
        }
        var lines = [
            "MCUboot image, version \(version), \(imageLength) bytes: header \(header.headerSize), body \(header.imageSize), TLVs \(imageLength - Int(header.headerSize) - Int(header.imageSize))",
            "  flags: \(header.flags.names); load address \(Hex.number(header.loadAddress, digits: 8))",
            "  hash (SHA-256 TLV, what image state reports): \(Hex.bytes(hash))",
            "  file SHA-256 (what an upload carries): \(Hex.bytes(fileSHA256))",
            "  protected TLVs: \(list(protectedTLVs))" + (securityCounter.map { "; security counter \($0)" } ?? ""),
            "  TLVs: \(list(tlvs))",
        ]
        if fileLength > imageLength { lines.append("  padding and trailer: \(fileLength - imageLength) bytes after the TLVs") }
        return lines.joined(separator: "\n")
    }

    /// Whether the image's first bytes are MCUboot's magic: a cheap test for "is this meant to be
    /// an MCUboot image", before the full check.
    public static func hasMagic(_ data: Data) -> Bool {
        data.count >= 4 && data.prefix(4).elementsEqual([0x3D, 0xB8, 0xF3, 0x96])
    }

    /// The TLVs of the area at `offset`, whose 4-byte info (magic, total size including the info)
    /// must say `magic` and `declaredSize`.
    private static func tlvArea(_ bytes: Tail, at offset: Int, magic: UInt16, declaredSize: Int) throws(MCUbootImageError) -> [MCUbootTLV] {
        guard bytes.u16(offset) == magic else { throw .badTLVAreaMagic(found: bytes.u16(offset), expected: magic, offset: offset) }
        guard let total = bytes.u16(offset + 2), Int(total) == declaredSize else {
            throw .tlvOverflow("the TLV area at byte \(offset) says \(bytes.u16(offset + 2).map(String.init) ?? "nothing") bytes, expected \(declaredSize)")
        }
        let end = offset + declaredSize
        guard declaredSize >= 4, end <= bytes.fileLength else {
            throw .tlvOverflow("the TLV area at byte \(offset) ends at byte \(end), beyond the file's \(bytes.fileLength)")
        }
        var tlvs: [MCUbootTLV] = []
        var cursor = offset + 4
        while cursor < end {
            guard cursor + 4 <= end, let type = bytes.u16(cursor), let length = bytes.u16(cursor + 2) else {
                throw .tlvOverflow("a TLV header at byte \(cursor) runs past its area's end at byte \(end)")
            }
            let valueEnd = cursor + 4 + Int(length)
            guard valueEnd <= end else {
                throw .tlvOverflow("TLV \(Hex.number(type, digits: 2)) at byte \(cursor) is \(length) bytes long, past its area's end at byte \(end)")
            }
            tlvs.append(MCUbootTLV(type: MCUbootTLV.Kind(rawValue: type), value: bytes[(cursor + 4)..<valueEnd]))
            cursor = valueEnd
        }
        return tlvs
    }
}

/// The 32-byte MCUboot image header, little-endian.
public struct MCUbootImageHeader: Sendable, Hashable {
    /// `0x96F3B83D`.
    public static let magic: UInt32 = 0x96F3_B83D
    /// The header's fixed fields' length; ``headerSize`` may pad it (commonly to `0x200`).
    public static let length = 32

    /// The load address (RAM-load and ROM-fixed images), 0 otherwise.
    public var loadAddress: UInt32
    /// Where the body starts.
    public var headerSize: UInt16
    /// The protected TLV area's size including its info, 0 if there is none.
    public var protectedTLVSize: UInt16
    /// The body's size.
    public var imageSize: UInt32
    /// The flags.
    public var flags: Flags
    /// The version.
    public var version: MCUbootVersion

    /// The header's flags.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Position-independent (unsupported by MCUboot).
        public static let pic = Flags(rawValue: 0x01)
        /// Body encrypted with AES-128.
        public static let encryptedAES128 = Flags(rawValue: 0x04)
        /// Body encrypted with AES-256.
        public static let encryptedAES256 = Flags(rawValue: 0x08)
        /// Not bootable (a second-core image).
        public static let nonBootable = Flags(rawValue: 0x10)
        /// Loaded into RAM.
        public static let ramLoad = Flags(rawValue: 0x20)
        /// Fixed ROM address.
        public static let romFixed = Flags(rawValue: 0x100)
        /// LZMA1-compressed.
        public static let compressedLZMA1 = Flags(rawValue: 0x200)
        /// LZMA2-compressed.
        public static let compressedLZMA2 = Flags(rawValue: 0x400)
        /// ARM thumb filter on compressed data.
        public static let armThumbFilter = Flags(rawValue: 0x800)

        static let names: [(Flags, String)] = [
            (.pic, "position-independent"), (.encryptedAES128, "encrypted (AES-128)"), (.encryptedAES256, "encrypted (AES-256)"),
            (.nonBootable, "non-bootable"), (.ramLoad, "RAM load"), (.romFixed, "ROM fixed"), (.compressedLZMA1, "LZMA1"),
            (.compressedLZMA2, "LZMA2"), (.armThumbFilter, "ARM thumb filter"),
        ]

        /// The flags' names, and any unknown bits in hexadecimal; "none" when empty.
        public var names: String {
            var parts = Self.names.filter { contains($0.0) }.map(\.1)
            let unknown = rawValue & ~Self.names.reduce(0) { $0 | $1.0.rawValue }
            if unknown != 0 { parts.append("unknown \(Hex.number(unknown, digits: 8))") }
            return parts.isEmpty ? "none" : parts.joined(separator: ", ")
        }
    }

    /// Reads the header from the start of `bytes`.
    init(_ bytes: [UInt8]) throws(MCUbootImageError) {
        guard bytes.count >= Self.length else { throw .truncated("\(bytes.count) bytes are shorter than the 32-byte image header") }
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) | UInt32(u16(at + 2)) << 16 }
        guard u32(0) == Self.magic else { throw .badMagic(u32(0)) }
        loadAddress = u32(4)
        headerSize = u16(8)
        guard Int(headerSize) >= Self.length else { throw .truncated("a header size of \(headerSize) bytes is less than the header's 32") }
        protectedTLVSize = u16(10)
        imageSize = u32(12)
        flags = Flags(rawValue: u32(16))
        version = MCUbootVersion(major: bytes[20], minor: bytes[21], revision: u16(22), build: u32(24))
    }
}

/// An image version: `major.minor.revision` and a build number.
public struct MCUbootVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Major.
    public var major: UInt8
    /// Minor.
    public var minor: UInt8
    /// Revision.
    public var revision: UInt16
    /// Build number.
    public var build: UInt32

    /// A version.
    public init(major: UInt8, minor: UInt8, revision: UInt16, build: UInt32 = 0) {
        self.major = major
        self.minor = minor
        self.revision = revision
        self.build = build
    }

    /// `1.2.3`, or `1.2.3.4` with a build number: the form image state reports.
    public var description: String { "\(major).\(minor).\(revision)" + (build == 0 ? "" : ".\(build)") }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.major, lhs.minor, lhs.revision, lhs.build) < (rhs.major, rhs.minor, rhs.revision, rhs.build)
    }
}

/// One type-length-value entry of an image's TLV areas.
public struct MCUbootTLV: Sendable, Hashable {
    /// The unprotected area's magic.
    public static let areaMagic: UInt16 = 0x6907
    /// The protected area's magic.
    public static let protectedAreaMagic: UInt16 = 0x6908

    /// The type.
    public var type: Kind
    /// The value.
    public var value: Data

    /// A TLV type.
    public struct Kind: WireCode {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// SHA-256 of the signing key.
        public static let keyHash = Kind(rawValue: 0x01)
        /// The signing key.
        public static let publicKey = Kind(rawValue: 0x02)
        /// SHA-256 of header, body and protected TLVs.
        public static let sha256 = Kind(rawValue: 0x10)
        /// SHA-384 digest.
        public static let sha384 = Kind(rawValue: 0x11)
        /// SHA-512 digest.
        public static let sha512 = Kind(rawValue: 0x12)
        /// RSA-2048 PSS signature.
        public static let rsa2048 = Kind(rawValue: 0x20)
        /// ECDSA signature.
        public static let ecdsa = Kind(rawValue: 0x22)
        /// RSA-3072 PSS signature.
        public static let rsa3072 = Kind(rawValue: 0x23)
        /// Ed25519 signature.
        public static let ed25519 = Kind(rawValue: 0x24)
        /// Marks a "pure" signature, over the image rather than its digest.
        public static let pureSignature = Kind(rawValue: 0x25)
        /// A dependency on another image (protected).
        public static let dependency = Kind(rawValue: 0x40)
        /// The security counter (protected).
        public static let securityCounter = Kind(rawValue: 0x50)
        /// A boot record.
        public static let bootRecord = Kind(rawValue: 0x60)
        public static let meanings: [Kind: String] = [
            .keyHash: "key hash", .publicKey: "public key", .sha256: "SHA-256", .sha384: "SHA-384", .sha512: "SHA-512",
            .rsa2048: "RSA-2048 signature", .ecdsa: "ECDSA signature", .rsa3072: "RSA-3072 signature", .ed25519: "Ed25519 signature",
            .pureSignature: "pure signature", .dependency: "dependency", .securityCounter: "security counter", .bootRecord: "boot record",
        ]
        public static func meaning(ofUnknown rawValue: UInt16) -> String {
            switch rawValue {
            case 0x30...0x34: "encrypted key"
            case 0x70...0x73: "decompression info"
            default: "TLV \(Hex.number(rawValue, digits: 2))"
            }
        }
    }

    /// A TLV.
    public init(type: Kind, value: Data) {
        self.type = type
        self.value = value
    }
}

/// Why a file is not an MCUboot image this side will send.
public enum MCUbootImageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The first four bytes are not `0x96F3B83D`.
    case badMagic(UInt32)
    /// The file ends before what its header declares.
    case truncated(String)
    /// No unprotected TLV area where the header says the image ends.
    case missingTLVArea(offset: Int)
    /// A TLV area's info has the wrong magic.
    case badTLVAreaMagic(found: UInt16?, expected: UInt16, offset: Int)
    /// A TLV or TLV area runs past its bounds.
    case tlvOverflow(String)
    /// No SHA-256 TLV.
    case noHash
    /// More than one SHA-256 TLV.
    case multipleHashes(Int)
    /// A SHA-256 TLV whose value is not 32 bytes.
    case badHashLength(Int)
    /// The SHA-256 TLV disagrees with the digest of header, body and protected TLVs.
    case hashMismatch(declared: Data, computed: Data)
    /// The image's file changed or could not be read while it was checked.
    case unreadable(String)

    public var description: String {
        switch self {
        case .badMagic(let magic):
            "not an MCUboot image: it starts with \(Hex.number(magic, digits: 8)), not the magic 0x96F3B83D (make it with imgtool create)"
        case .truncated(let detail): "the MCUboot image is truncated: \(detail)"
        case .missingTLVArea(let offset):
            "the MCUboot image has no TLV area at byte \(offset), where its header says the image ends (the file is not what imgtool wrote)"
        case .badTLVAreaMagic(let found, let expected, let offset):
            "the MCUboot image's TLV area at byte \(offset) starts with \(found.map { Hex.number($0, digits: 4) } ?? "nothing"), not \(Hex.number(expected, digits: 4))"
        case .tlvOverflow(let detail): "the MCUboot image's TLVs overflow: \(detail)"
        case .noHash: "the MCUboot image has no SHA-256 TLV, so neither MCUboot nor this tool can check it (make it with imgtool create)"
        case .multipleHashes(let count): "the MCUboot image has \(count) SHA-256 TLVs; a device refuses more than one"
        case .badHashLength(let count): "the MCUboot image's SHA-256 TLV is \(count) bytes, not 32"
        case .hashMismatch(let declared, let computed):
            "the MCUboot image's hash does not match its contents (TLV \(Hex.bytes(declared.prefix(4)))…, computed \(Hex.bytes(computed.prefix(4)))…): the file was changed after imgtool made it"
        case .unreadable(let message): message
        }
    }
}
