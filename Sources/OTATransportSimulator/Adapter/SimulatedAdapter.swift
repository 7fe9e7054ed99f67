import OTACore
import Synchronization

/// One simulated Bluetooth controller (a USB dongle, a Raspberry Pi's radio) that several
/// ``SimulatedConnector``s share: it holds at most ``connectionLimit`` connections and has one
/// radio, whose airtime its links divide.
///
/// The airtime model, deliberately simple: a controller interleaves the connection events of
/// its links on one radio, so within one connection interval the links together cannot use
/// more than the interval. A link's connection event may start packet pairs while it is shorter
/// than `interval ÷ k`, where `k` counts the adapter's links that have something to send when
/// the event starts (the link itself included), and no pair may end beyond what is left of the
/// current interval window (windows of the link's interval, counted from time zero; the
/// adapter assumes its links share one interval). Idle links take no
/// airtime (their empty keep-alive packets are ignored). One busy link therefore gets the
/// whole radio, four busy links a quarter each: the adapter's capacity is that of one link,
/// whatever the number of connections.
///
/// A connect beyond the limit fails at once with ``TransportError/Kind/connectionFailed``, as
/// a controller answers LE Create Connection with "Connection Limit Exceeded" (HCI 0x09).
/// The adapter counts a connection from the moment the connect starts (the controller is
/// establishing it) until the link drops or the connect fails.
public final class SimulatedAdapter: Sendable {
    /// A name for messages ("hci0").
    public let name: String
    /// The most connections the controller holds at once.
    public let connectionLimit: Int

    private struct State {
        var nextToken: UInt64 = 0
        var slots: [UInt64: WeakConnection] = [:]
        var peak = 0
        var refused = 0
        var windowIndex: Int64 = -1
        var windowUsed: Duration = .zero
        var airtime: Duration = .zero
    }

    private struct WeakConnection {
        weak var connection: SimulatedConnection?
    }

    private let state = Mutex(State())

    /// Creates an adapter.
    ///
    /// - Parameters:
    ///   - name: a name for messages.
    ///   - connectionLimit: the most connections at once (controllers take a handful: 4 to 20).
    public init(name: String = "hci0", connectionLimit: Int) {
        precondition(connectionLimit >= 1, "an adapter holds at least one connection")
        self.name = name
        self.connectionLimit = connectionLimit
    }

    /// Connections held now (being established or up).
    public var connectionCount: Int { state.withLock { $0.slots.count } }

    /// The most connections the adapter ever held at once: measured here, where the limit is
    /// enforced, not by whoever schedules the connects.
    public var peakConnections: Int { state.withLock { $0.peak } }

    /// Connects refused because every connection was in use.
    public var refusedConnects: Int { state.withLock { $0.refused } }

    /// Airtime all the adapter's links used so far: never more than the virtual time elapsed
    /// (plus at most one event's spill at a window's end).
    public var airtimeUsed: Duration { state.withLock { $0.airtime } }

    /// Takes a connection slot, or throws when all are in use.
    func reserve(for device: String) throws(TransportError) -> UInt64 {
        let token: UInt64? = state.withLock { state in
            guard state.slots.count < connectionLimit else {
                state.refused += 1
                return nil
            }
            state.nextToken += 1
            state.slots[state.nextToken] = WeakConnection()
            state.peak = max(state.peak, state.slots.count)
            return state.nextToken
        }
        guard let token else {
            throw TransportError(
                .connectionFailed,
                "\(name) refused to connect \(device): connection limit exceeded (\(connectionLimit) of \(connectionLimit) in use)"
            )
        }
        return token
    }

    /// Hands the slot to the link it was reserved for.
    func bind(_ token: UInt64, to connection: SimulatedConnection) {
        state.withLock { $0.slots[token]?.connection = connection }
    }

    /// Frees a slot (the link dropped, or the connect failed).
    func release(_ token: UInt64) {
        _ = state.withLock { $0.slots.removeValue(forKey: token) }
    }

    /// How long a connection event of `connection` starting at `start` may go on, under the
    /// sharing rule above: `share`, the link's fair part of the interval (a packet pair may
    /// start while the event is shorter than it), and `left`, what remains of the current
    /// window (no pair may end beyond it).
    func eventBudget(for connection: SimulatedConnection, interval: Duration, at start: Duration) -> (share: Duration, left: Duration) {
        let others = state.withLock { state in state.slots.values.compactMap(\.connection).filter { $0 !== connection } }
        // Asked outside the adapter's lock: each link takes its own.
        let busy = 1 + others.filter { $0.hasAirWork(at: start) }.count
        return state.withLock { state in
            let window = Int64((start / interval).rounded(.down))
            if window != state.windowIndex {
                state.windowIndex = window
                state.windowUsed = .zero
            }
            return (interval / busy, max(.zero, interval - state.windowUsed))
        }
    }

    /// Books airtime a connection event used.
    func charge(_ used: Duration) {
        state.withLock { state in
            state.windowUsed += used
            state.airtime += used
        }
    }
}
