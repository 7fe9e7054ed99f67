/// A failure of the link itself, raised by a ``Transport``.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of transport failure.
    public enum Kind: Sendable, Hashable {
        /// The link is down.
        case disconnected(DisconnectReason)
        /// The device has no such characteristic.
        case unknownCharacteristic(CharacteristicID)
        /// The characteristic does not allow the operation.
        case notPermitted
        /// The value is longer than the link can carry in one write.
        case valueTooLong(length: Int, maximum: Int)
        /// The device answered with an ATT error code.
        case attError(UInt8)
        /// The device could not be found or connected.
        case connectionFailed
        /// Anything else, described by the message.
        case other
    }

    /// The kind of failure.
    public var kind: Kind
    /// A one-line message for a person.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The link went down.
    public static func disconnected(_ reason: DisconnectReason) -> TransportError {
        TransportError(.disconnected(reason), "link lost: \(reason)")
    }

    public var description: String { message }

    /// The ``OTAError/Code`` this failure maps to.
    public var otaCode: OTAError.Code {
        switch kind {
        case .disconnected: .disconnected
        case .unknownCharacteristic: .missingCharacteristic
        case .connectionFailed: .connectionFailed
        case .notPermitted, .valueTooLong, .attError, .other: .transport
        }
    }
}
