/// An ATT result code, as a device answers a write or read (Bluetooth Core, Vol 3, Part F, 3.4.1.1).
public struct ATTStatus: RawRepresentable, Sendable, Hashable, Error, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The operation succeeded.
    public static let success = ATTStatus(rawValue: 0x00)
    /// The attribute cannot be read.
    public static let readNotPermitted = ATTStatus(rawValue: 0x02)
    /// The attribute cannot be written.
    public static let writeNotPermitted = ATTStatus(rawValue: 0x03)
    /// The PDU was malformed.
    public static let invalidPDU = ATTStatus(rawValue: 0x04)
    /// The request is not supported.
    public static let requestNotSupported = ATTStatus(rawValue: 0x06)
    /// The value has the wrong length.
    public static let invalidAttributeValueLength = ATTStatus(rawValue: 0x0D)
    /// The device lacks resources to handle the request.
    public static let insufficientResources = ATTStatus(rawValue: 0x11)
    /// A CCCD is not configured as required (used by Nordic's DFU as 0xFD).
    public static let cccdImproperlyConfigured = ATTStatus(rawValue: 0xFD)

    public var description: String {
        let name: String =
            switch self {
            case .success: "success"
            case .readNotPermitted: "read not permitted"
            case .writeNotPermitted: "write not permitted"
            case .invalidPDU: "invalid PDU"
            case .requestNotSupported: "request not supported"
            case .invalidAttributeValueLength: "invalid attribute value length"
            case .insufficientResources: "insufficient resources"
            case .cccdImproperlyConfigured: "CCCD improperly configured"
            default: rawValue >= 0x80 ? "application error" : "ATT error"
            }
        return "ATT \(Hex.number(rawValue)) (\(name))"
    }
}
