/// A Control Point result code, with Nordic's meaning.
public struct DFUResultCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalid = DFUResultCode(rawValue: 0x00)
    public static let success = DFUResultCode(rawValue: 0x01)
    public static let opCodeNotSupported = DFUResultCode(rawValue: 0x02)
    public static let invalidParameter = DFUResultCode(rawValue: 0x03)
    public static let insufficientResources = DFUResultCode(rawValue: 0x04)
    public static let invalidObject = DFUResultCode(rawValue: 0x05)
    public static let signatureMismatch = DFUResultCode(rawValue: 0x06)
    public static let unsupportedType = DFUResultCode(rawValue: 0x07)
    public static let operationNotPermitted = DFUResultCode(rawValue: 0x08)
    public static let operationFailed = DFUResultCode(rawValue: 0x0A)
    public static let extendedError = DFUResultCode(rawValue: 0x0B)

    /// Nordic's meaning.
    public var meaning: String {
        switch self {
        case .invalid: "invalid op code"
        case .success: "success"
        case .opCodeNotSupported: "op code not supported"
        case .invalidParameter: "invalid parameter"
        case .insufficientResources: "insufficient resources (object or image too large)"
        case .invalidObject: "invalid object (init packet malformed or bad signature)"
        case .signatureMismatch: "signature mismatch"
        case .unsupportedType: "unsupported object type"
        case .operationNotPermitted: "operation not permitted in this state"
        case .operationFailed: "operation failed"
        case .extendedError: "extended error"
        default: "unknown result"
        }
    }

    public var description: String { "0x\(rawValue < 0x10 ? "0" : "")\(String(rawValue, radix: 16, uppercase: true)) (\(meaning))" }
}

/// The byte after result 0x0B: what exactly the bootloader refused.
public struct DFUExtendedError: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let noError = DFUExtendedError(rawValue: 0x00)
    public static let wrongCommandFormat = DFUExtendedError(rawValue: 0x02)
    public static let unknownCommand = DFUExtendedError(rawValue: 0x03)
    public static let initCommandInvalid = DFUExtendedError(rawValue: 0x04)
    public static let firmwareVersionFailure = DFUExtendedError(rawValue: 0x05)
    public static let hardwareVersionFailure = DFUExtendedError(rawValue: 0x06)
    public static let softDeviceVersionFailure = DFUExtendedError(rawValue: 0x07)
    public static let signatureMissing = DFUExtendedError(rawValue: 0x08)
    public static let wrongHashType = DFUExtendedError(rawValue: 0x09)
    public static let hashFailed = DFUExtendedError(rawValue: 0x0A)
    public static let wrongSignatureType = DFUExtendedError(rawValue: 0x0B)
    public static let verificationFailed = DFUExtendedError(rawValue: 0x0C)
    public static let insufficientSpace = DFUExtendedError(rawValue: 0x0D)

    /// Nordic's meaning, with what to do.
    public var meaning: String {
        switch self {
        case .noError: "no error"
        case .wrongCommandFormat: "wrong command format"
        case .unknownCommand: "unknown command"
        case .initCommandInvalid: "init packet invalid (missing type, size, hw_version or fw_version)"
        case .firmwareVersionFailure: "firmware version too low (must not be older than the installed one)"
        case .hardwareVersionFailure: "hardware version mismatch (hw_version differs from the bootloader's)"
        case .softDeviceVersionFailure: "SoftDevice requirement not met (sd_req lacks the installed SoftDevice)"
        case .signatureMissing: "signature missing (this bootloader only accepts signed packages)"
        case .wrongHashType: "wrong hash type (must be SHA-256)"
        case .hashFailed: "hash could not be computed"
        case .wrongSignatureType: "wrong signature type (must be ECDSA P-256 SHA-256)"
        case .verificationFailed: "verification failed (the received image's hash differs from the init packet's)"
        case .insufficientSpace: "insufficient flash space for the image"
        default: "unknown extended error"
        }
    }

    public var description: String { "0x\(rawValue < 0x10 ? "0" : "")\(String(rawValue, radix: 16, uppercase: true)) (\(meaning))" }
}
