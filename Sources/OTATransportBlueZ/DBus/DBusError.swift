#if os(Linux)
import OTACore

/// A D-Bus error: a name to branch on (`org.bluez.Error.NotPermitted`) and a message for a person.
///
/// Error replies from the bus or a peer arrive as this type, with their name and message intact.
/// Failures detected locally use the standard `org.freedesktop.DBus.Error.*` names, as libdbus
/// does: a timed-out call is ``Name/noReply``, a closed connection ``Name/disconnected``, a value of
/// the wrong type ``Name/invalidArgs``. Throw one from an exported method to send it as the reply.
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// An error name such as `org.freedesktop.DBus.Error.UnknownMethod`.
    public struct Name: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The dotted name.
        public var rawValue: String

        /// Creates a name; it must be a valid D-Bus error name to be sent in a reply.
        public init(rawValue: String) { self.rawValue = rawValue }

        public init(stringLiteral value: String) { rawValue = value }

        public var description: String { rawValue }

        /// A generic failure.
        public static let failed: Name = "org.freedesktop.DBus.Error.Failed"
        /// Out of memory.
        public static let noMemory: Name = "org.freedesktop.DBus.Error.NoMemory"
        /// No reply came within the timeout.
        public static let noReply: Name = "org.freedesktop.DBus.Error.NoReply"
        /// The connection is closed or was lost.
        public static let disconnected: Name = "org.freedesktop.DBus.Error.Disconnected"
        /// The destination name has no owner (for BlueZ: `bluetoothd` is not running).
        public static let serviceUnknown: Name = "org.freedesktop.DBus.Error.ServiceUnknown"
        /// The name has no owner.
        public static let nameHasNoOwner: Name = "org.freedesktop.DBus.Error.NameHasNoOwner"
        /// The arguments do not have the expected types.
        public static let invalidArgs: Name = "org.freedesktop.DBus.Error.InvalidArgs"
        /// A signature is malformed.
        public static let invalidSignature: Name = "org.freedesktop.DBus.Error.InvalidSignature"
        /// No object at the path.
        public static let unknownObject: Name = "org.freedesktop.DBus.Error.UnknownObject"
        /// The object has no such interface.
        public static let unknownInterface: Name = "org.freedesktop.DBus.Error.UnknownInterface"
        /// The object has no such method.
        public static let unknownMethod: Name = "org.freedesktop.DBus.Error.UnknownMethod"
        /// The interface has no such property.
        public static let unknownProperty: Name = "org.freedesktop.DBus.Error.UnknownProperty"
        /// The property cannot be set.
        public static let propertyReadOnly: Name = "org.freedesktop.DBus.Error.PropertyReadOnly"
        /// The bus policy refused the message.
        public static let accessDenied: Name = "org.freedesktop.DBus.Error.AccessDenied"
        /// The operation is not supported.
        public static let notSupported: Name = "org.freedesktop.DBus.Error.NotSupported"
    }

    /// What kind of error this is.
    public var name: Name
    /// A message for a person; may be empty.
    public var message: String

    /// Creates an error.
    public init(name: Name, message: String) {
        self.name = name
        self.message = message
    }

    /// The error pending calls fail with when their connection is closed by ``DBusConnection/close()``.
    public static let connectionClosed = DBusError(name: .disconnected, message: "the D-Bus connection was closed")

    /// The error pending calls fail with when the bus goes away.
    public static let connectionLost = DBusError(
        name: .disconnected,
        message: "the connection to the D-Bus bus was lost"
    )

    public var description: String { message.isEmpty ? name.rawValue : "\(name.rawValue): \(message)" }
}

extension DBusError {
    /// The transport failure this error stands for, with BlueZ's error names translated.
    ///
    /// | D-Bus error | Transport error |
    /// |---|---|
    /// | `…DBus.Error.Disconnected`, `org.bluez.Error.NotConnected` | `.disconnected` |
    /// | `org.bluez.Error.NotPermitted`, `…NotAuthorized`, `…DBus.Error.AccessDenied` | `.notPermitted` |
    /// | `org.bluez.Error.Failed` with "ATT error: 0x0e" in its message | `.attError(0x0e)` |
    /// | `…ServiceUnknown`, `…NameHasNoOwner`, `…UnknownObject` | `.connectionFailed` |
    /// | `org.bluez.Error.DoesNotExist`, `…NotReady`, `…ConnectionAttemptFailed` | `.connectionFailed` |
    /// | anything else, including timeouts (`…NoReply`) | `.other` |
    var transportError: TransportError {
        let text = "D-Bus error \(description)"
        switch name.rawValue {
        case Name.disconnected.rawValue:
            return TransportError(.disconnected(DisconnectReason(message, isLocal: self == .connectionClosed)), text)
        case "org.bluez.Error.NotConnected":
            return TransportError(.disconnected(DisconnectReason("the device is not connected")), text)
        case "org.bluez.Error.NotPermitted", "org.bluez.Error.NotAuthorized", Name.accessDenied.rawValue:
            return TransportError(.notPermitted, text)
        case Name.serviceUnknown.rawValue, Name.nameHasNoOwner.rawValue, Name.unknownObject.rawValue,
            "org.bluez.Error.DoesNotExist", "org.bluez.Error.NotReady", "org.bluez.Error.ConnectionAttemptFailed":
            return TransportError(.connectionFailed, text)
        case "org.bluez.Error.Failed":
            if let code = attErrorCode { return TransportError(.attError(code), text) }
            return TransportError(.other, text)
        default:
            return TransportError(.other, text)
        }
    }

    /// The ATT error code in a BlueZ message such as "Operation failed with ATT error: 0x0e".
    private var attErrorCode: UInt8? {
        guard let marker = message.firstRange(of: "ATT error: 0x") else { return nil }
        let digits = message[marker.upperBound...].prefix { $0.isHexDigit }
        return UInt8(digits, radix: 16)
    }
}
#endif
