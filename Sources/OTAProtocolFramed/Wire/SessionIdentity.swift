import OTACore

/// What identifies one update: image size, CRC-32 and version. A resume continues only a session
/// with the same identity, so two different images are never spliced.
public struct SessionIdentity: Sendable, Hashable, CustomStringConvertible {
    /// Image size in bytes.
    public var size: UInt32
    /// CRC-32 of the whole image.
    public var crc: UInt32
    /// A version number the app chooses (the firmware's version, or 0).
    public var version: UInt32

    public var description: String {
        "\(size) bytes, CRC-32 \(Hex.number(crc)), version \(version)"
    }
}
