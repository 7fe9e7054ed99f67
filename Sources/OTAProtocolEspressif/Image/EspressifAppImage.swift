import Foundation
import OTACore

/// An ESP-IDF application image as `esptool.py elf2image` writes it: the 24-byte header (magic
/// 0xE9, segment count, SPI flash mode, size and frequency, entry point, then the extended
/// header with the chip and the hash flag), the segments (load address, length, data), zero
/// padding so that the checksum byte ends a 16-byte block, and, when the hash flag is set, the
/// SHA-256 of everything before it.
public struct EspressifAppImage: Sendable, Hashable {
    /// One segment.
    public struct Segment: Sendable, Hashable {
        /// Where it is loaded.
        public var loadAddress: UInt32
        /// Its file offset (of the data, after the 8-byte segment header).
        public var offset: Int
        /// Its length.
        public var length: Int
    }

    /// The first byte of every app image.
    public static let magic: UInt8 = 0xE9
    /// The header and extended header.
    public static let headerLength = 24
    /// The XOR checksum's starting value.
    public static let checksumSeed: UInt8 = 0xEF

    /// Segments in the header.
    public var segmentCount: Int
    /// SPI flash mode byte (0 QIO, 1 QOUT, 2 DIO, 3 DOUT).
    public var spiMode: UInt8
    /// SPI flash size nibble (0 1 MB … 7 128 MB).
    public var spiSize: UInt8
    /// SPI flash frequency nibble.
    public var spiFrequency: UInt8
    /// The entry point.
    public var entryPoint: UInt32
    /// Write-protect pin (0xEE: disabled).
    public var wpPin: UInt8
    /// The chip the image is built for (0 ESP32, 2 S2, 5 C3, 9 S3, 12 C2, 13 C6, 16 H2, 18 P4).
    public var chipID: UInt16
    /// Minimum chip revision, `major * 100 + minor`.
    public var minimumRevision: UInt16
    /// Maximum chip revision, `major * 100 + minor`.
    public var maximumRevision: UInt16
    /// Whether a SHA-256 is appended after the checksum.
    public var hashAppended: Bool
    /// The segments.
    public var segments: [Segment]
    /// The checksum byte found.
    public var checksum: UInt8
    /// The checksum computed over the segments' data.
    public var computedChecksum: UInt8
    /// The appended SHA-256, when present.
    public var appendedSHA256: [UInt8]?
    /// The SHA-256 of the bytes before it, when a hash is appended.
    public var computedSHA256: [UInt8]?
    /// Bytes after the image (flash padding, a signature block…).
    public var trailingBytes: Int
    /// `version`, `project_name` and `idf_ver` from the `esp_app_desc_t` at the start of the
    /// first segment, when it is there (magic 0xABCD5432).
    public var appDescription: (version: String, project: String, idf: String)? {
        appDescriptionFields.map { ($0[0], $0[1], $0[2]) }
    }
    private var appDescriptionFields: [String]?

    /// Whether `bytes` start like an app image: the magic, 1…16 segments and a known SPI mode.
    /// Used to tell an app image from other files before reading it.
    public static func looksLikeAppImage(_ bytes: Data) -> Bool {
        guard bytes.count >= headerLength else { return false }
        let start = bytes.startIndex
        return bytes[start] == magic && (1...16).contains(bytes[start + 1]) && bytes[start + 2] <= 5
    }

    /// Reads an image.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` in one line: the wrong magic, a header or
    ///   segment that runs past the end, no room for the checksum or the hash.
    public init(parsing data: Data, name: String) throws(OTAError) {
        // The one input a FirmwareImage refuses, empty, is too short for the header.
        guard let image = try? FirmwareImage(bytes: data, name: name) else {
            throw OTAError(.invalidImage, "\(MessageText.name(name)) is not an ESP-IDF app image: 0 bytes, shorter than the 24-byte header")
        }
        try self.init(reading: image)
    }

    /// Reads an image as ``init(parsing:name:)`` does, reading only its headers and hashing the
    /// segments window by window (an image in a file is never held whole).
    ///
    /// - Throws: as ``init(parsing:name:)``; ``OTAError/Code/invalidImage`` when the image's file
    ///   changed since it was opened.
    public init(reading image: FirmwareImage) throws(OTAError) {
        let (count, name) = (image.count, image.name)
        func read(_ range: Range<Int>) throws(OTAError) -> [UInt8] { [UInt8](try image[range]) }
        func sha256(_ range: Range<Int>) throws(OTAError) -> [UInt8] { [UInt8](try image.sha256(of: range)) }
        func bad(_ reason: String) -> OTAError { OTAError(.invalidImage, "\(MessageText.name(name)) is not an ESP-IDF app image: \(reason)") }
        guard count >= Self.headerLength else { throw bad("\(count) bytes, shorter than the 24-byte header") }
        let header = try read(0..<Self.headerLength)
        guard header[0] == Self.magic else { throw bad("magic \(Hex.number(header[0], digits: 2)), expected 0xE9") }
        func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
        func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 { UInt32(u16(bytes, at)) | UInt32(u16(bytes, at + 2)) << 16 }
        segmentCount = Int(header[1])
        spiMode = header[2]
        spiSize = header[3] >> 4
        spiFrequency = header[3] & 0x0F
        entryPoint = u32(header, 4)
        wpPin = header[8]
        chipID = u16(header, 12)
        minimumRevision = u16(header, 15)
        maximumRevision = u16(header, 17)
        hashAppended = header[23] == 1
        guard (1...16).contains(segmentCount) else { throw bad("\(segmentCount) segments, expected 1...16") }
        var offset = Self.headerLength
        var segments: [Segment] = []
        var checksum = Self.checksumSeed
        for index in 0..<segmentCount {
            guard offset + 8 <= count else { throw bad("segment \(index)'s header runs past the end (\(count) bytes)") }
            let segmentHeader = try read(offset..<(offset + 8))
            let length = Int(u32(segmentHeader, 4))
            guard length <= count - offset - 8 else {
                throw bad("segment \(index) (\(length) bytes at \(offset + 8)) runs past the end (\(count) bytes)")
            }
            segments.append(Segment(loadAddress: u32(segmentHeader, 0), offset: offset + 8, length: length))
            var position = offset + 8
            while position < offset + 8 + length {
                let end = min(offset + 8 + length, position + FirmwareImageFile.windowSize)
                checksum = Self.xorChecksum(try image[position..<end], from: checksum)
                position = end
            }
            offset += 8 + length
        }
        self.segments = segments
        computedChecksum = checksum
        let checksumAt = offset + (15 - offset % 16)
        guard checksumAt < count else { throw bad("no checksum byte at \(checksumAt) (\(count) bytes)") }
        self.checksum = try read(checksumAt..<(checksumAt + 1))[0]
        var end = checksumAt + 1
        if hashAppended {
            guard end + 32 <= count else { throw bad("the header says a SHA-256 is appended, but only \(count - end) bytes follow the checksum") }
            appendedSHA256 = try read(end..<(end + 32))
            computedSHA256 = try sha256(0..<end)
            end += 32
        }
        trailingBytes = count - end
        if let first = segments.first, first.length >= 144 {
            let description = try read(first.offset..<(first.offset + 144))
            if u32(description, 0) == 0xABCD_5432 {
                func text(_ at: Int, _ count: Int) -> String {
                    String(decoding: description[at..<(at + count)].prefix { $0 != 0 }, as: UTF8.self)
                }
                appDescriptionFields = [text(16, 32), text(48, 32), text(112, 32)]
            }
        }
    }

    /// What is wrong with the image, each in one line: a checksum or SHA-256 that does not match.
    public var problems: [String] {
        var problems: [String] = []
        if checksum != computedChecksum {
            problems.append("checksum byte is \(Hex.number(checksum, digits: 2)), the segments give \(Hex.number(computedChecksum, digits: 2))")
        }
        if let appended = appendedSHA256, let computed = computedSHA256, appended != computed {
            problems.append("appended SHA-256 \(Hex.bytes(appended)) does not match the image's \(Hex.bytes(computed))")
        }
        return problems
    }

    /// A name for the chip ID.
    public var chipName: String {
        switch chipID {
        case 0: "ESP32"
        case 2: "ESP32-S2"
        case 5: "ESP32-C3"
        case 9: "ESP32-S3"
        case 12: "ESP32-C2"
        case 13: "ESP32-C6"
        case 16: "ESP32-H2"
        case 18: "ESP32-P4"
        default: "chip \(chipID)"
        }
    }

    /// The report `ota inspect` prints.
    public func report(name: String, size: Int) -> String {
        let modes = ["QIO", "QOUT", "DIO", "DOUT", "FAST_READ", "SLOW_READ"]
        let sizes = ["1MB", "2MB", "4MB", "8MB", "16MB", "32MB", "64MB", "128MB"]
        let frequencies: [UInt8: String] = [0x0: "40m", 0x1: "26m", 0x2: "20m", 0xF: "80m"]
        var lines = [
            "ESP-IDF app image \(MessageText.name(name)): \(size) bytes, for \(chipName) (chip rev v\(minimumRevision / 100).\(minimumRevision % 100)...v\(maximumRevision / 100).\(maximumRevision % 100))"
        ]
        lines.append(
            "  header: magic 0xE9, \(segmentCount) segment\(segmentCount == 1 ? "" : "s"), SPI \(spiMode < 6 ? modes[Int(spiMode)] : "mode \(spiMode)") "
                + "\(spiSize < 8 ? sizes[Int(spiSize)] : "size \(spiSize)") \(frequencies[spiFrequency] ?? "freq \(spiFrequency)"), "
                + "entry \(Hex.number(entryPoint, digits: 8)), WP pin \(Hex.number(wpPin, digits: 2))")
        if let app = appDescription { lines.append("  app: \(app.project) \(app.version) (ESP-IDF \(app.idf))") }
        for (index, segment) in segments.enumerated() {
            lines.append(
                "  segment \(index): \(segment.length) bytes, header at file offset \(Hex.number(segment.offset - 8, digits: 8)), load address \(Hex.number(segment.loadAddress, digits: 8))"
            )
        }
        let checksumState = checksum == computedChecksum ? "matches" : "MISMATCH, segments give \(Hex.number(computedChecksum, digits: 2))"
        lines.append("  checksum: \(Hex.number(checksum, digits: 2)) (\(checksumState))")
        if let appended = appendedSHA256 {
            lines.append("  SHA-256 appended: \(Hex.bytes(appended)) (\(appended == computedSHA256 ? "matches" : "MISMATCH"))")
        } else {
            lines.append("  SHA-256: none appended (hash flag clear)")
        }
        if trailingBytes > 0 { lines.append("  \(trailingBytes) bytes after the image (padding or a signature block)") }
        return lines.joined(separator: "\n")
    }

    /// `seed` XORed with every byte of `bytes` (the image's segment checksum), eight bytes a
    /// step: a loop over `Data`'s iterator costs about 8 ns a byte, most of a megabyte image's
    /// preparation.
    static func xorChecksum(_ bytes: Data, from seed: UInt8) -> UInt8 {
        bytes.withUnsafeBytes { raw -> UInt8 in
            var words: UInt64 = 0
            var index = 0
            while index + 8 <= raw.count {
                words ^= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                index += 8
            }
            var checksum = seed
            while index < raw.count {
                checksum ^= raw[index]
                index += 1
            }
            // The eight lanes of the word, folded into one byte.
            words ^= words >> 32
            words ^= words >> 16
            words ^= words >> 8
            return checksum ^ UInt8(truncatingIfNeeded: words)
        }
    }

    /// Wraps `payload` in an app image of one segment, as `esptool.py elf2image` lays it out
    /// (header, segment, padding, checksum, SHA-256): for measurements and tests that start from
    /// bare bytes. The result is not a bootable program.
    public static func wrap(_ payload: Data, chipID: UInt16 = 9, loadAddress: UInt32 = 0x3C00_0020, entryPoint: UInt32 = 0x4037_5A1C) -> Data {
        var writer = ByteWriter(capacity: payload.count + 80)
        writer.u8(magic)
        writer.u8(1)
        writer.u8(2)  // DIO
        writer.u8(0x20)  // 4MB, 40m
        writer.u32(entryPoint)
        writer.u8(0xEE)
        for _ in 0..<3 { writer.u8(0) }
        writer.u16(chipID)
        writer.u8(0)
        writer.u16(0)
        writer.u16(0xFFFF)
        for _ in 0..<4 { writer.u8(0) }
        writer.u8(1)
        writer.u32(loadAddress)
        writer.u32(UInt32(payload.count))
        var bytes = writer.data
        bytes.append(payload)
        let checksum = xorChecksum(payload, from: checksumSeed)
        bytes.append(contentsOf: [UInt8](repeating: 0, count: 15 - bytes.count % 16))
        bytes.append(checksum)
        bytes.append(contentsOf: SHA256.hash(bytes))
        return bytes
    }
}

/// `ota inspect` for ESP-IDF app images, and the check before connecting. App images are sent
/// as they are, so ``load(_:)`` never claims a file.
public struct EspressifAppImageFormat: FirmwareContainerFormat, RawImagePreparation {
    /// Creates the format.
    public init() {}

    /// Always `nil`: an app image is not a container; the file is sent as it is.
    public func load(_ url: URL) throws(OTAError) -> [FirmwareImage]? { nil }

    /// The image's header, segments, checksum and appended SHA-256; `nil` for a file that does
    /// not start like an app image.
    public func inspect(_ url: URL) throws(OTAError) -> FirmwareInspection? {
        let image = try FirmwareImage(contentsOf: url)
        guard EspressifAppImage.looksLikeAppImage(try image.prefix(EspressifAppImage.headerLength)) else { return nil }
        let app = try EspressifAppImage(reading: image)
        return FirmwareInspection(report: app.report(name: image.name, size: image.count), problems: app.problems)
    }

    /// Wraps bare bytes in a one-segment app image with its SHA-256 (``EspressifAppImage/wrap(_:chipID:loadAddress:entryPoint:)``),
    /// so measurements from bare bytes pass the client's check.
    public func prepare(_ image: FirmwareImage) throws(OTAError) -> FirmwareImage {
        if EspressifAppImage.looksLikeAppImage(try image.prefix(EspressifAppImage.headerLength)) { return image }
        // Wrapping makes a new image in memory (measurements and tests start from bare bytes).
        return try FirmwareImage(bytes: EspressifAppImage.wrap(try image.allBytes()), name: image.name)
    }

    /// Refuses, in one line, what the device's `esp_ota_end` would: not an app image, or an
    /// appended SHA-256 or checksum that does not match.
    public static func check(_ image: FirmwareImage) throws(OTAError) {
        let app = try EspressifAppImage(reading: image)
        let problems = app.problems
        if !problems.isEmpty {
            throw OTAError(.invalidImage, "\(MessageText.name(image.name)): \(problems.joined(separator: "; ")); refusing to send it")
        }
    }
}
