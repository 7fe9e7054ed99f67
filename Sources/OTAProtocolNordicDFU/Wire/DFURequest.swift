import Foundation
import OTACore

/// A Control Point request.
public enum DFURequest: Sendable, Hashable, CustomStringConvertible {
    case create(DFUObjectType, size: UInt32)
    case setPRN(UInt16)
    case calculateChecksum
    case execute
    case select(DFUObjectType)
    case abort

    /// The op code.
    public var opCode: DFUOpCode {
        switch self {
        case .create: .create
        case .setPRN: .setPRN
        case .calculateChecksum: .calculateChecksum
        case .execute: .execute
        case .select: .select
        case .abort: .abort
        }
    }

    /// The bytes on the wire (`01 02 00 10 00 00` creates a 4096-byte data object): at most six,
    /// laid out in place and copied once into the result (a byte-by-byte append to `Data` costs
    /// tens of nanoseconds a byte, and a client sends three or four requests per object).
    public var encoded: Data {
        let op = opCode.rawValue
        let bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)
        switch self {
        case .create(let type, let size):
            bytes = (
                op, type.rawValue, UInt8(truncatingIfNeeded: size), UInt8(truncatingIfNeeded: size >> 8), UInt8(truncatingIfNeeded: size >> 16),
                UInt8(truncatingIfNeeded: size >> 24)
            )
        case .setPRN(let value):
            bytes = (op, UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8), 0, 0, 0)
        case .select(let type):
            bytes = (op, type.rawValue, 0, 0, 0, 0)
        case .calculateChecksum, .execute, .abort:
            bytes = (op, 0, 0, 0, 0, 0)
        }
        // The op code's one request length, which decoding demands too (a request's op code is
        // never Response's, which has none).
        let count = opCode.requestLength ?? 1
        return withUnsafeBytes(of: bytes) { Data($0.prefix(count)) }
    }

    /// Parses a request, as the bootloader does; `nil` when malformed.
    public init?(decoding data: Data) {
        var reader = ByteReader(data)
        guard let opCode = reader.u8().flatMap(DFUOpCode.init(rawValue:)), data.count == opCode.requestLength else { return nil }
        switch opCode {
        case .create:
            guard let type = reader.u8().flatMap(DFUObjectType.init(rawValue:)), let size = reader.u32() else { return nil }
            self = .create(type, size: size)
        case .setPRN:
            guard let value = reader.u16() else { return nil }
            self = .setPRN(value)
        case .calculateChecksum: self = .calculateChecksum
        case .execute: self = .execute
        case .select:
            guard let type = reader.u8().flatMap(DFUObjectType.init(rawValue:)) else { return nil }
            self = .select(type)
        case .abort: self = .abort
        case .response: return nil
        }
    }

    public var description: String {
        switch self {
        case .create(let type, let size): "Create \(type) of \(size) bytes"
        case .setPRN(let value): "Set PRN to \(value)"
        case .select(let type): "Select \(type)"
        case .calculateChecksum, .execute, .abort: opCode.description
        }
    }
}
