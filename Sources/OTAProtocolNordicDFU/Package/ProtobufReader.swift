import Foundation
import OTACore

/// A minimal protocol buffers wire-format reader, enough to decode a DFU init packet.
///
/// It reads one message: a sequence of (field number, wire type, value) records. Nested messages
/// are read by making a reader over a length-delimited value, so nesting is exactly as deep as
/// the schema that drives it (the init packet's schema is five levels deep) and unknown fields
/// are skipped without being descended into. Groups (wire types 3 and 4) and the undefined wire
/// types 6 and 7 are refused.
///
/// Every read is bounds-checked; errors name the file and the byte offset from the start of the
/// whole buffer: `app.dat: truncated protobuf at byte 12`.
struct ProtobufReader {
    /// A field value as found on the wire.
    enum Value {
        /// Wire type 0.
        case varint(UInt64)
        /// Wire type 1.
        case fixed64(UInt64)
        /// Wire type 2: the bytes of the value, indexed like the whole buffer.
        case lengthDelimited(Data)
        /// Wire type 5.
        case fixed32(UInt32)

        /// The wire type number, for messages.
        var wireType: Int {
            switch self {
            case .varint: 0
            case .fixed64: 1
            case .lengthDelimited: 2
            case .fixed32: 5
            }
        }
    }

    /// One field record.
    struct Field {
        /// The field number (1 ... 2^29 - 1).
        var number: Int
        /// The value.
        var value: Value
        /// Where the record's key starts, from the start of the whole buffer.
        var offset: Int
    }

    /// The message bytes; indices are offsets into the whole buffer (a slice keeps its parent's).
    private let bytes: Data
    /// The next byte to read.
    private var position: Int
    /// The file name that starts every error message.
    let fileName: String

    /// A reader over a whole buffer or a slice of one (a nested message).
    init(_ bytes: Data, fileName: String) {
        self.bytes = bytes
        self.position = bytes.startIndex
        self.fileName = fileName
    }

    /// An error naming the file.
    func error(_ problem: String) -> OTAError {
        OTAError(.invalidImage, "\(fileName): \(problem)")
    }

    /// Whether every byte has been read.
    var isAtEnd: Bool { position >= bytes.endIndex }

    /// Reads the next field, or returns nil at the end of the message.
    mutating func next() throws(OTAError) -> Field? {
        guard !isAtEnd else { return nil }
        let start = position
        let key = try readVarint()
        let wireType = Int(key & 0x7)
        let number = key >> 3
        guard number >= 1, number <= 0x1FFF_FFFF else {
            throw error("invalid field number \(number) at byte \(start)")
        }
        let value: Value
        switch wireType {
        case 0:
            value = .varint(try readVarint())
        case 1:
            value = .fixed64(try readLittleEndian(count: 8))
        case 2:
            let lengthStart = position
            let length = try readVarint()
            guard length <= UInt64(bytes.endIndex - position) else {
                throw error("truncated protobuf at byte \(lengthStart): field \(number) declares \(length) bytes but only \(bytes.endIndex - position) remain")
            }
            let end = position + Int(length)
            value = .lengthDelimited(bytes[position..<end])
            position = end
        case 5:
            value = .fixed32(UInt32(truncatingIfNeeded: try readLittleEndian(count: 4)))
        default:
            let kind = wireType == 3 || wireType == 4 ? " (groups are not used by init packets)" : ""
            throw error("unsupported protobuf wire type \(wireType)\(kind) for field \(number) at byte \(start)")
        }
        return Field(number: Int(number), value: value, offset: start)
    }

    /// Reads a base-128 varint (at most 10 bytes).
    mutating func readVarint() throws(OTAError) -> UInt64 {
        let start = position
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < bytes.endIndex else {
                throw error("truncated protobuf at byte \(start)")
            }
            let byte = bytes[position]
            position += 1
            if shift == 63, byte > 1 {
                throw error("varint too long at byte \(start)")
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 {
                throw error("varint too long at byte \(start)")
            }
        }
    }

    /// Reads `count` little-endian bytes.
    private mutating func readLittleEndian(count: Int) throws(OTAError) -> UInt64 {
        guard bytes.endIndex - position >= count else {
            throw error("truncated protobuf at byte \(position)")
        }
        var result: UInt64 = 0
        for index in 0..<count {
            result |= UInt64(bytes[position + index]) << UInt64(8 * index)
        }
        position += count
        return result
    }
}

// MARK: - Typed access to known fields

extension ProtobufReader {
    /// The varint value of `field`, or an error naming it when it has another wire type.
    func varint(_ field: Field, _ name: String) throws(OTAError) -> UInt64 {
        guard case .varint(let value) = field.value else {
            throw wrongType(field, name, expected: "varint")
        }
        return value
    }

    /// The uint32 (or enum) value of `field`; values beyond 32 bits are refused.
    func uint32(_ field: Field, _ name: String) throws(OTAError) -> UInt32 {
        let value = try varint(field, name)
        guard let narrow = UInt32(exactly: value) else {
            throw error("\(name) value \(value) is out of range (at byte \(field.offset))")
        }
        return narrow
    }

    /// A length-delimited field the schema allows once: its bytes, or an error naming the byte
    /// where it appears again when `previous` already holds it.
    func onlyMessage(_ field: Field, _ name: String, previous: Data?) throws(OTAError) -> Data {
        guard previous == nil else { throw error("\(name) appears twice (at byte \(field.offset))") }
        return try message(field, name)
    }

    /// The bytes of a length-delimited `field` (a nested message or a bytes value).
    func message(_ field: Field, _ name: String) throws(OTAError) -> Data {
        guard case .lengthDelimited(let bytes) = field.value else {
            throw wrongType(field, name, expected: "length-delimited")
        }
        return bytes
    }

    /// The error for a known field found with the wrong wire type.
    func wrongType(_ field: Field, _ name: String, expected: String) -> OTAError {
        error("\(name) (field \(field.number)) at byte \(field.offset) has wire type \(field.value.wireType), expected \(expected)")
    }
}
