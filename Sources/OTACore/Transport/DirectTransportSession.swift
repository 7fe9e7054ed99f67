/// A session with nothing set up around it: the update runs where it is called, waiting on
/// ``clock`` (a radio, a serial or UDP link). The simulator's session instead runs it inside the
/// simulation, in virtual time.
public struct DirectTransportSession: TransportSession {
    public let connector: any Connector
    public let clock: any Clock<Duration>
    public let restartDelay: Duration

    /// None: nothing runs on its own executor.
    public var executor: (any TaskExecutor)? { nil }

    /// Creates a session that opens links with `connector` and waits on `clock`; its
    /// ``connector`` follows the device (``FollowingConnector``), so that the next part of an
    /// update starts where the previous one found it.
    public init(connector: any Connector, clock: any Clock<Duration>, restartDelay: Duration) {
        self.connector = connector is FollowingConnector ? connector : FollowingConnector(connector)
        self.clock = clock
        self.restartDelay = restartDelay
    }

    /// Runs `body` here.
    public func run<R: Sendable>(_ body: @escaping @Sendable @concurrent () async throws(OTAError) -> R) async throws(OTAError) -> R {
        try await body()
    }
}
