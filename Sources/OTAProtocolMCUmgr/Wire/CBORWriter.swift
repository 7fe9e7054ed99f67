import Foundation

/// Writes CBOR items into a buffer sized beforehand: heads and bytes stored in place, no
/// ``CBOR`` values built and no appends to a growing `Data`. For the frames sent per chunk (image
/// upload requests), whose layout is fixed; ``CBOR/encode(into:)`` encodes everything else.
///
/// Produces the same bytes as ``CBOR/encoded`` (preferred serialisation: shortest heads).
struct CBORWriter: ~Copyable {
    private let buffer: UnsafeMutableRawBufferPointer
    /// Bytes written so far.
    private(set) var position = 0

    /// A writer at the start of `buffer`, which must be large enough for everything written.
    init(_ buffer: UnsafeMutableRawBufferPointer) {
        self.buffer = buffer
    }

    /// The length of an integer's head: ``CBOR/headLength(_:)`` of its magnitude.
    static func integerLength(_ value: Int) -> Int {
        CBOR.headLength(value >= 0 ? UInt64(value) : UInt64(-(value + 1)))
    }

    /// The length of ``text(_:)``'s encoding of `key`, head included.
    static func textLength(_ key: StaticString) -> Int { CBOR.headLength(UInt64(key.utf8CodeUnitCount)) + key.utf8CodeUnitCount }

    /// The length of ``bytes(_:)``'s encoding of `data`, head included.
    static func bytesLength(_ data: Data) -> Int { CBOR.headLength(UInt64(data.count)) + data.count }

    /// A head of major type `major` with `value`.
    mutating func head(_ major: UInt8, _ value: UInt64) {
        let length = CBOR.headLength(value)
        precondition(position + length <= buffer.count, "CBOR writer buffer too small")
        let type = major << 5
        switch length {
        case 1:
            buffer[position] = type | UInt8(value)
        default:
            buffer[position] = type | (length == 2 ? 24 : length == 3 ? 25 : length == 5 ? 26 : 27)
            for index in 1..<length { buffer[position + index] = UInt8(truncatingIfNeeded: value >> UInt64(8 * (length - 1 - index))) }
        }
        position += length
    }

    /// An integer (major type 0 or 1).
    mutating func integer(_ value: Int) {
        if value >= 0 { head(0, UInt64(value)) } else { head(1, UInt64(-(value + 1))) }
    }

    /// A text string of ASCII `key` (a map key).
    mutating func text(_ key: StaticString) {
        head(3, UInt64(key.utf8CodeUnitCount))
        raw(UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
    }

    /// A byte string.
    mutating func bytes(_ data: Data) {
        head(2, UInt64(data.count))
        data.withUnsafeBytes { raw($0) }
    }

    /// `true` or `false`.
    mutating func bool(_ value: Bool) {
        raw(byte: value ? 0xF5 : 0xF4)
    }

    /// Bytes as they are (an SMP header).
    mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        precondition(position + bytes.count <= buffer.count, "CBOR writer buffer too small")
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        buffer.baseAddress!.advanced(by: position).copyMemory(from: source, byteCount: bytes.count)
        position += bytes.count
    }

    /// One byte as it is.
    mutating func raw(byte: UInt8) {
        precondition(position < buffer.count, "CBOR writer buffer too small")
        buffer[position] = byte
        position += 1
    }
}
