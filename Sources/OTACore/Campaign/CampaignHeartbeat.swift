/// Keeps a gateway's leases while it updates their devices: renews them every third of the
/// lease on the lease clock, until cancelled.
///
/// Run it beside ``CampaignRunner/run(_:fleet:observe:)`` and outside any simulation (its waits
/// are on the wall clock, which a simulation's virtual time does not follow):
///
/// ```swift
/// let heartbeat = Task { await CampaignHeartbeat(store: store, gateway: "pi-1", lease: .seconds(30)).run() }
/// defer { heartbeat.cancel() }
/// ```
public struct CampaignHeartbeat: Sendable {
    /// The store the leases are in.
    public var store: any CampaignStore
    /// The gateway whose leases are renewed.
    public var gateway: String
    /// Each renewal extends the leases to this from now.
    public var lease: Duration
    /// The clock the waits are on.
    public var clock: any CampaignLeaseClock

    /// Creates a heartbeat.
    public init(store: any CampaignStore, gateway: String, lease: Duration, clock: any CampaignLeaseClock = WallLeaseClock()) {
        self.store = store
        self.gateway = gateway
        self.lease = lease
        self.clock = clock
    }

    /// Renews the leases every `lease / 3` until the calling task is cancelled (or the clock's
    /// wait throws).
    ///
    /// - Parameter failed: called with a renewal that failed (the store is unreachable); the
    ///   heartbeat goes on, and a lease that expires meanwhile is refused at the attempt's end.
    /// - Returns: the renewals made.
    @discardableResult
    public func run(failed: (@Sendable (OTAError) -> Void)? = nil) async -> Int {
        var beats = 0
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: lease / 3)
            } catch {
                break
            }
            do throws(OTAError) {
                try store.renew(gateway: gateway, lease: lease)
                beats += 1
            } catch {
                failed?(error)
            }
        }
        return beats
    }
}
