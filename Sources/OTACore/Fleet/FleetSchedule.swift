/// The fleet scheduler's decisions, as a value-type state machine with no transport and no
/// clock: it is told the time and what finished, and answers which updates to start.
///
/// The policy: devices are taken in the order given; a waiting device starts on the first of its
/// adapters with a free connection (fewer running than the adapter's limit); a failed attempt
/// puts the device back, to start again no earlier than its backoff, until
/// ``FleetPolicy/maximumAttempts``. A device in backoff does not hold up the devices behind it.
public struct FleetSchedule: Sendable {
    /// An update to start.
    public struct Start: Sendable, Hashable {
        /// The device's index in the list given.
        public var device: Int
        /// The adapter's index in the list given.
        public var adapter: Int
        /// 1 for the first attempt.
        public var attempt: Int
        // Only the schedule decides a start: the memberwise init stays internal.
    }

    /// Where a device stands.
    public enum Phase: Sendable, Hashable {
        /// Waiting for a free connection, not before `notBefore`.
        case waiting(notBefore: Duration)
        /// An attempt is running on this adapter.
        case running(adapter: Int)
        /// Updated.
        case succeeded
        /// Failed ``FleetPolicy/maximumAttempts`` times, or no adapter reaches it.
        case failed
    }

    /// The adapters.
    public let adapters: [FleetAdapter]
    /// The policy.
    public let policy: FleetPolicy
    /// For each device, the indices of the adapters that reach it, preferred first.
    public let reach: [[Int]]
    /// Each device's phase.
    public private(set) var phases: [Phase]
    /// Each device's attempts so far.
    public private(set) var attempts: [Int]
    /// Connections running now per adapter, by the scheduler's own count.
    public private(set) var running: [Int]

    /// Creates a schedule for `reach.count` devices; a device no adapter reaches is failed at
    /// once.
    public init(adapters: [FleetAdapter], reach: [[Int]], policy: FleetPolicy) {
        self.adapters = adapters
        self.policy = policy
        self.reach = reach.map { $0.filter { adapters.indices.contains($0) } }
        phases = self.reach.map { $0.isEmpty ? .failed : .waiting(notBefore: .zero) }
        attempts = Array(repeating: 0, count: reach.count)
        running = Array(repeating: 0, count: adapters.count)
    }

    /// Whether every device has succeeded or failed for good.
    public var isFinished: Bool {
        phases.allSatisfy { $0 == .succeeded || $0 == .failed }
    }

    /// The updates to start at `now`; each is counted as running until ``finished(_:succeeded:at:)``.
    public mutating func start(at now: Duration) -> [Start] {
        var starts: [Start] = []
        for device in phases.indices {
            guard case .waiting(let notBefore) = phases[device], notBefore <= now else { continue }
            guard let adapter = reach[device].first(where: { running[$0] < adapters[$0].connectionLimit }) else { continue }
            running[adapter] += 1
            attempts[device] += 1
            phases[device] = .running(adapter: adapter)
            starts.append(Start(device: device, adapter: adapter, attempt: attempts[device]))
        }
        return starts
    }

    /// The earliest time after `now` a waiting device comes out of backoff, if any: when to
    /// call ``start(at:)`` again if nothing finishes first.
    public func nextWake(after now: Duration) -> Duration? {
        phases.compactMap { phase -> Duration? in
            guard case .waiting(let notBefore) = phase, notBefore > now else { return nil }
            return notBefore
        }.min()
    }

    /// Records the end of `device`'s running attempt at `now`.
    public mutating func finished(_ device: Int, succeeded: Bool, at now: Duration) {
        guard case .running(let adapter) = phases[device] else {
            preconditionFailure("device \(device) finished an attempt it was not running")
        }
        running[adapter] -= 1
        if succeeded {
            phases[device] = .succeeded
        } else if attempts[device] >= policy.maximumAttempts {
            phases[device] = .failed
        } else {
            phases[device] = .waiting(notBefore: now + policy.backoff(afterAttempt: attempts[device]))
        }
    }
}
