import Foundation

/// The domain of ``CBError``.
public let CBErrorDomain: String = "CBErrorDomain"
/// The domain of ``CBATTError``.
public let CBATTErrorDomain: String = "CBATTErrorDomain"

/// A CoreBluetooth error, as Swift imports `CBError`: `error as? CBError`, `error.code ==
/// CBError.connectionTimeout` and `CBError(.peripheralDisconnected)` compile as on Darwin.
public struct CBError: CustomNSError, Hashable, Sendable {
    /// The error codes, with Darwin's raw values.
    public enum Code: Int, Sendable {
        case unknown = 0
        case invalidParameters = 1
        case invalidHandle = 2
        case notConnected = 3
        case outOfSpace = 4
        case operationCancelled = 5
        case connectionTimeout = 6
        case peripheralDisconnected = 7
        case uuidNotAllowed = 8
        case alreadyAdvertising = 9
        case connectionFailed = 10
        case connectionLimitReached = 11
        case unknownDevice = 12
        case operationNotSupported = 13
        case peerRemovedPairingInformation = 14
        case encryptionTimedOut = 15
        case tooManyLEPairedDevices = 16
        case leGattExceededBackgroundNotificationLimit = 17
        case leGattNearBackgroundNotificationLimit = 18
    }

    /// The code.
    public let code: Code

    /// An error with `code`.
    public init(_ code: Code) { self.code = code }

    public static var errorDomain: String { CBErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: "CoreBluetooth error \(code.rawValue) (\(code))"] }

    public static var unknown: Code { .unknown }
    public static var invalidParameters: Code { .invalidParameters }
    public static var invalidHandle: Code { .invalidHandle }
    public static var notConnected: Code { .notConnected }
    public static var outOfSpace: Code { .outOfSpace }
    public static var operationCancelled: Code { .operationCancelled }
    public static var connectionTimeout: Code { .connectionTimeout }
    public static var peripheralDisconnected: Code { .peripheralDisconnected }
    public static var uuidNotAllowed: Code { .uuidNotAllowed }
    public static var alreadyAdvertising: Code { .alreadyAdvertising }
    public static var connectionFailed: Code { .connectionFailed }
    public static var connectionLimitReached: Code { .connectionLimitReached }
    public static var unknownDevice: Code { .unknownDevice }
    public static var operationNotSupported: Code { .operationNotSupported }
    public static var peerRemovedPairingInformation: Code { .peerRemovedPairingInformation }
    public static var encryptionTimedOut: Code { .encryptionTimedOut }
    public static var tooManyLEPairedDevices: Code { .tooManyLEPairedDevices }
    public static var leGattExceededBackgroundNotificationLimit: Code { .leGattExceededBackgroundNotificationLimit }
    public static var leGattNearBackgroundNotificationLimit: Code { .leGattNearBackgroundNotificationLimit }
}

/// An ATT error a peripheral answered with, as Swift imports `CBATTError`.
public struct CBATTError: CustomNSError, Hashable, Sendable {
    /// The ATT status codes, with their wire values.
    public enum Code: Int, Sendable {
        case success = 0x00
        case invalidHandle = 0x01
        case readNotPermitted = 0x02
        case writeNotPermitted = 0x03
        case invalidPdu = 0x04
        case insufficientAuthentication = 0x05
        case requestNotSupported = 0x06
        case invalidOffset = 0x07
        case insufficientAuthorization = 0x08
        case prepareQueueFull = 0x09
        case attributeNotFound = 0x0A
        case attributeNotLong = 0x0B
        case insufficientEncryptionKeySize = 0x0C
        case invalidAttributeValueLength = 0x0D
        case unlikelyError = 0x0E
        case insufficientEncryption = 0x0F
        case unsupportedGroupType = 0x10
        case insufficientResources = 0x11
    }

    /// The code.
    public let code: Code

    /// An error with `code`.
    public init(_ code: Code) { self.code = code }

    public static var errorDomain: String { CBATTErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: "ATT error \(code.rawValue) (\(code))"] }

    public static var success: Code { .success }
    public static var invalidHandle: Code { .invalidHandle }
    public static var readNotPermitted: Code { .readNotPermitted }
    public static var writeNotPermitted: Code { .writeNotPermitted }
    public static var invalidPdu: Code { .invalidPdu }
    public static var insufficientAuthentication: Code { .insufficientAuthentication }
    public static var requestNotSupported: Code { .requestNotSupported }
    public static var invalidOffset: Code { .invalidOffset }
    public static var insufficientAuthorization: Code { .insufficientAuthorization }
    public static var prepareQueueFull: Code { .prepareQueueFull }
    public static var attributeNotFound: Code { .attributeNotFound }
    public static var attributeNotLong: Code { .attributeNotLong }
    public static var insufficientEncryptionKeySize: Code { .insufficientEncryptionKeySize }
    public static var invalidAttributeValueLength: Code { .invalidAttributeValueLength }
    public static var unlikelyError: Code { .unlikelyError }
    public static var insufficientEncryption: Code { .insufficientEncryption }
    public static var unsupportedGroupType: Code { .unsupportedGroupType }
    public static var insufficientResources: Code { .insufficientResources }
}
