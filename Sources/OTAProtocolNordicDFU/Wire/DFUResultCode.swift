import OTACore

/// A Control Point result code, with Nordic's meaning.
public struct DFUResultCode: WireCode {
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

    public static let meanings: [DFUResultCode: String] = [
        .invalid: "invalid op code",
        .success: "success",
        .opCodeNotSupported: "op code not supported",
        .invalidParameter: "invalid parameter",
        .insufficientResources: "insufficient resources (object or image too large)",
        .invalidObject: "invalid object (init packet malformed or bad signature)",
        .signatureMismatch: "signature mismatch",
        .unsupportedType: "unsupported object type",
        .operationNotPermitted: "operation not permitted in this state",
        .operationFailed: "operation failed",
        .extendedError: "extended error",
    ]

    public static func meaning(ofUnknown rawValue: UInt8) -> String { "unknown result" }

    /// "0x0B (extended error)".
    public var description: String { "\(hexCode) (\(meaning))" }
}

/// The byte after result 0x0B: what exactly the bootloader refused.
public struct DFUExtendedError: WireCode {
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

    public static let meanings: [DFUExtendedError: String] = [
        .noError: "no error",
        .wrongCommandFormat: "wrong command format",
        .unknownCommand: "unknown command",
        .initCommandInvalid: "init packet invalid (missing type, size, hw_version or fw_version)",
        .firmwareVersionFailure: "firmware version too low (must not be older than the installed one)",
        .hardwareVersionFailure: "hardware version mismatch (hw_version differs from the bootloader's)",
        .softDeviceVersionFailure: "SoftDevice requirement not met (sd_req lacks the installed SoftDevice)",
        .signatureMissing: "signature missing (this bootloader only accepts signed packages)",
        .wrongHashType: "wrong hash type (must be SHA-256)",
        .hashFailed: "hash could not be computed",
        .wrongSignatureType: "wrong signature type (must be ECDSA P-256 SHA-256)",
        .verificationFailed: "verification failed (the received image's hash differs from the init packet's)",
        .insufficientSpace: "insufficient flash space for the image",
    ]

    public static func meaning(ofUnknown rawValue: UInt8) -> String { "unknown extended error" }

    /// "0x0B (extended error)".
    public var description: String { "\(hexCode) (\(meaning))" }
}
