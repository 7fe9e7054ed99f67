import Foundation

/// Reads little-endian integers from a byte buffer, failing softly (`nil`) on short input: the
/// shared reader of the protocols' wire formats.
public struct ByteReader: Sendable {
    private let bytes: [UInt8]
    /// Bytes consumed so far.
    public private(set) var position = 0

    /// Reads `data` from its first byte.
    public init(_ data: Data) { bytes = [UInt8](data) }

    /// Bytes not read yet.
    public var remaining: Int { bytes.count - position }

    /// The next byte, or `nil` at the end.
    public mutating func u8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    /// The next little-endian `UInt16`, or `nil` when fewer than 2 bytes remain.
    public mutating func u16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { position += 2 }
        return UInt16(bytes[position]) | UInt16(bytes[position + 1]) << 8
    }

    /// The next little-endian `UInt32`, or `nil` when fewer than 4 bytes remain.
    public mutating func u32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { position += 4 }
        return UInt32(bytes[position]) | UInt32(bytes[position + 1]) << 8 | UInt32(bytes[position + 2]) << 16
            | UInt32(bytes[position + 3]) << 24
    }

    /// The next `count` bytes, or `nil` when fewer remain (or `count` is negative).
    public mutating func bytes(_ count: Int) -> Data? {
        guard count >= 0, remaining >= count else { return nil }
        defer { position += count }
        return Data(bytes[position..<(position + count)])
    }

    /// Everything not read yet.
    public mutating func rest() -> Data {
        defer { position = bytes.count }
        return Data(bytes[position...])
    }
}
