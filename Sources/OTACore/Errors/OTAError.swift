/// The one error type of an update: a code to branch on, a message a person can act on, and the
/// underlying cause when there is one.
///
/// The message is written for the person running the update: it names what failed and, where
/// possible, what to do next ("device rejected START: status 0xFF, flash error"). Code that
/// reacts to failures should switch on ``code`` rather than parse the message.
public struct OTAError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Open for extension: new codes can be added without breaking
    /// clients that switch over the known ones with a `default` branch.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case invalidImage = "invalid-image"
            case imageTooLarge = "image-too-large"
            case unknownProtocol = "unknown-protocol"
            case invalidParameter = "invalid-parameter"
            case connectionFailed = "connection-failed"
            case disconnected
            case missingCharacteristic = "missing-characteristic"
            case timeout
            case deviceRejected = "device-rejected"
            case verificationFailed = "verification-failed"
            case malformedResponse = "malformed-response"
            case transport
            case cancelled
            case stalled
            case invalidManifest = "invalid-manifest"
            case incompatible
            case selectionFailed = "selection-failed"
            case deviceNotReady = "device-not-ready"
            case storage
            case `internal`
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The firmware image cannot be used (empty, unreadable, malformed).
        public static let invalidImage = Code(.invalidImage)
        /// The image does not fit the device's update slot.
        public static let imageTooLarge = Code(.imageTooLarge)
        /// No protocol with the requested name is registered.
        public static let unknownProtocol = Code(.unknownProtocol)
        /// A protocol or engine parameter has an unusable value.
        public static let invalidParameter = Code(.invalidParameter)
        /// The device could not be reached or connected.
        public static let connectionFailed = Code(.connectionFailed)
        /// The link dropped during the update.
        public static let disconnected = Code(.disconnected)
        /// The device does not expose a characteristic the protocol needs.
        public static let missingCharacteristic = Code(.missingCharacteristic)
        /// The device did not answer within the configured time.
        public static let timeout = Code(.timeout)
        /// The device refused a command and reported a status.
        public static let deviceRejected = Code(.deviceRejected)
        /// The device checked the received image and found it wrong (CRC or size mismatch).
        public static let verificationFailed = Code(.verificationFailed)
        /// The device sent something that does not follow the protocol.
        public static let malformedResponse = Code(.malformedResponse)
        /// The transport failed in a way not covered by a more specific code.
        public static let transport = Code(.transport)
        /// The update was cancelled by the caller (for example Ctrl-C).
        public static let cancelled = Code(.cancelled)
        /// Data stopped flowing: the link accepted no write for the configured stall timeout.
        public static let stalled = Code(.stalled)
        /// A catalog or package manifest is malformed or inconsistent with its files.
        public static let invalidManifest = Code(.invalidManifest)
        /// A firmware package does not fit the device (family or hardware).
        public static let incompatible = Code(.incompatible)
        /// No protocol could be chosen for the device, or the sources that choose disagree.
        public static let selectionFailed = Code(.selectionFailed)
        /// The device cannot take an update now (its battery is below the required level).
        public static let deviceNotReady = Code(.deviceNotReady)
        /// A campaign's database cannot be used: not there, not a campaign, locked, or failing.
        public static let storage = Code(.storage)
        /// A bug in this library: please report it.
        public static let `internal` = Code(.internal)

        /// A stable, kebab-case name for the code, used in JSON output.
        public var description: String { value.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A one-line message for a person, naming the cause and, where known, the next step.
    public var message: String
    /// The error that caused this one, if any.
    public var underlying: (any Error & Sendable)?
    /// Where the error was raised, for bug reports.
    public var file: String
    /// The line where the error was raised.
    public var line: UInt

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        underlying: (any Error & Sendable)? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.file = file
        self.line = line
    }

    /// The message, followed by the underlying cause when it adds information.
    public var description: String {
        guard let underlying else { return message }
        let cause = String(describing: underlying)
        return message.contains(cause) ? message : "\(message) (\(cause))"
    }
}

extension OTAError {
    /// Wraps any error as an `OTAError`, keeping it unchanged when it already is one.
    ///
    /// Cancellation becomes ``Code/cancelled``; a ``TransportError`` keeps its own message.
    public static func wrapping(_ error: any Error, context: String) -> OTAError {
        switch error {
        case let error as OTAError:
            return error
        case let error as TransportError:
            return OTAError(error.otaCode, "\(context): \(error.message)", underlying: error)
        case is CancellationError:
            return OTAError(.cancelled, "\(context): cancelled")
        default:
            return OTAError(.internal, "\(context): \(error)", underlying: SendableErrorBox(error))
        }
    }
}

/// Carries a non-`Sendable` error's description across concurrency domains.
struct SendableErrorBox: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = String(describing: error) }
}
