import Foundation

/// A reply notified on OTA Control: `0x81 status` for START, `0x82 status` for COMMIT.
public enum GenericReply: Sendable, Hashable {
    /// The answer to START.
    case start(GenericStatus)
    /// The answer to COMMIT.
    case commit(GenericStatus)

    /// The reply op code for START.
    public static let startOpCode: UInt8 = 0x81
    /// The reply op code for COMMIT.
    public static let commitOpCode: UInt8 = 0x82

    /// The bytes on the wire.
    public var encoded: Data {
        switch self {
        case .start(let status): Data([Self.startOpCode, status.rawValue])
        case .commit(let status): Data([Self.commitOpCode, status.rawValue])
        }
    }

    /// Parses a notification; `nil` unless it is exactly two bytes with a known op code.
    public init?(decoding bytes: Data) {
        let bytes = [UInt8](bytes)
        guard bytes.count == 2 else { return nil }
        switch bytes[0] {
        case Self.startOpCode: self = .start(GenericStatus(rawValue: bytes[1]))
        case Self.commitOpCode: self = .commit(GenericStatus(rawValue: bytes[1]))
        default: return nil
        }
    }
}
