/// Where a device's update session stands, as BEGIN replies and Status report it.
public enum FramedSessionState: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// No session.
    case idle = 0
    /// Receiving data.
    case receiving = 1
    /// Every byte received; waiting for COMMIT.
    case complete = 2
    /// The session's image was committed.
    case installed = 3
    /// Flash failed; only a new BEGIN helps.
    case failed = 4

    public var description: String {
        switch self {
        case .idle: "idle"
        case .receiving: "receiving"
        case .complete: "complete"
        case .installed: "installed"
        case .failed: "failed"
        }
    }
}
