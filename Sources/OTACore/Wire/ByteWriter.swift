import Foundation

/// Appends little-endian integers to a byte buffer: the shared writer of the protocols' wire
/// formats.
public struct ByteWriter: Sendable {
    /// The bytes written so far.
    public private(set) var data = Data()

    /// Starts empty, with room for `capacity` bytes.
    public init(capacity: Int = 16) { data.reserveCapacity(capacity) }

    /// Appends a byte.
    public mutating func u8(_ value: UInt8) { data.append(value) }

    /// Appends a little-endian `UInt16`.
    public mutating func u16(_ value: UInt16) {
        data.append(UInt8(truncatingIfNeeded: value))
        data.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    /// Appends a little-endian `UInt32`.
    public mutating func u32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { data.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// Appends `bytes` as they are.
    public mutating func bytes(_ bytes: some Sequence<UInt8>) { data.append(contentsOf: bytes) }
}
