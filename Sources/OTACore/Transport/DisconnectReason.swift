/// Why a link went down.
public struct DisconnectReason: Sendable, Hashable, CustomStringConvertible {
    /// A short explanation ("supervision timeout", "device rebooted", "closed by the app").
    public var description: String
    /// Whether the app closed the link itself (as opposed to losing it).
    public var isLocal: Bool

    /// Creates a reason.
    public init(_ description: String, isLocal: Bool = false) {
        self.description = description
        self.isLocal = isLocal
    }

    /// The app closed the link.
    public static let closedByApp = DisconnectReason("closed by the app", isLocal: true)
}
