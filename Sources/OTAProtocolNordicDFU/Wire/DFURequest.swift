import Foundation

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

    /// The bytes on the wire (`01 02 00 10 00 00` creates a 4096-byte data object).
    public var encoded: Data {
        switch self {
        case .create(let type, let size):
            Data([DFUOpCode.create.rawValue, type.rawValue]) + Data((0..<4).map { UInt8(truncatingIfNeeded: size >> (8 * $0)) })
        case .setPRN(let value):
            Data([DFUOpCode.setPRN.rawValue, UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)])
        case .calculateChecksum, .execute, .abort:
            Data([opCode.rawValue])
        case .select(let type):
            Data([DFUOpCode.select.rawValue, type.rawValue])
        }
    }

    /// Parses a request, as the bootloader does; `nil` when malformed.
    public init?(decoding data: Data) {
        let bytes = [UInt8](data)
        switch (bytes.first.flatMap(DFUOpCode.init(rawValue:)), bytes.count) {
        case (.create, 6):
            guard let type = DFUObjectType(rawValue: bytes[1]) else { return nil }
            self = .create(type, size: (0..<4).reduce(0) { $0 | UInt32(bytes[2 + $1]) << (8 * $1) })
        case (.setPRN, 3): self = .setPRN(UInt16(bytes[1]) | UInt16(bytes[2]) << 8)
        case (.calculateChecksum, 1): self = .calculateChecksum
        case (.execute, 1): self = .execute
        case (.select, 2):
            guard let type = DFUObjectType(rawValue: bytes[1]) else { return nil }
            self = .select(type)
        case (.abort, 1): self = .abort
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .create(let type, let size): "Create \(type) of \(size) bytes"
        case .setPRN(let value): "Set PRN to \(value)"
        case .calculateChecksum: "Calculate Checksum"
        case .execute: "Execute"
        case .select(let type): "Select \(type)"
        case .abort: "Abort"
        }
    }
}
