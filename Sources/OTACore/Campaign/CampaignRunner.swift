import Synchronization

/// Runs a campaign from its store to its end, and can be stopped at any point: run it again
/// with the same store and it goes on from what the store recorded.
///
/// Each stage's devices are updated by the ``FleetScheduler`` (each adapter within its
/// connection limit), one attempt per device per round; a device that failed is tried again in
/// the next round, after a backoff, until the plan's attempts are spent. Every attempt's start
/// and end is recorded in the store before the run goes on, so a device is never forgotten nor,
/// once recorded as updated, updated again. An attempt a killed process left open counts as a
/// failed attempt ("the previous run stopped during this attempt") and is retried.
public struct CampaignRunner: Sendable {
    /// The engine each update runs with; its clock is the run's clock.
    public var engine: UpdateEngine
    /// Backoff between rounds (its attempt limit is not used: the plan's is).
    public var backoff: FleetPolicy
    /// Who runs it, for the history ("gateway-1", a host name).
    public var gateway: String

    /// Creates a runner.
    public init(engine: UpdateEngine, backoff: FleetPolicy = FleetPolicy(), gateway: String) {
        self.engine = engine
        self.backoff = backoff
        self.gateway = gateway
    }

    /// What the runner did, as it happens.
    public enum Event: Sendable {
        /// Stage `stage` (its index) starts a round of attempts on `devices` devices.
        case round(stage: Int, round: Int, devices: Int)
        /// An attempt on `device` starts.
        case started(device: String, attempt: Int, adapter: String)
        /// That attempt ended.
        case finished(device: String, attempt: Int, outcome: CampaignAttemptOutcome)
        /// The campaign ended.
        case ended(CampaignPhase, detail: String)
    }

    /// Runs the campaign in `store` on `fleet` until it completes or aborts.
    ///
    /// - Parameters:
    ///   - fleet: the devices, by address, and the adapters that reach them.
    ///   - observe: receives every ``Event``.
    /// - Returns: the campaign as recorded at the end.
    /// - Throws: ``OTAError/Code/storage`` when the store fails (the campaign can be run again
    ///   once it works), or what `fleet` throws for a device it cannot make.
    public func run(
        _ store: any CampaignStore, fleet: any CampaignFleet, observe: (@Sendable (Event) -> Void)? = nil
    ) async throws(OTAError) -> CampaignSnapshot {
        var snapshot = try store.snapshot()
        guard snapshot.phase == .running else { return snapshot }
        let plan = snapshot.plan
        // Attempts a killed run left open ended without a verdict: count them as failed.
        for record in snapshot.devices where record.state == .updating {
            let outcome = CampaignAttemptOutcome.failed(
                message: "the previous run stopped during this attempt", final: record.attempts >= plan.maximumAttempts)
            try store.attemptFinished(device: record.address, attempt: record.attempts, outcome: outcome)
            observe?(.finished(device: record.address, attempt: record.attempts, outcome: outcome))
        }
        snapshot = try store.snapshot()
        for (index, stage) in plan.stages.enumerated() {
            var round = 0
            while true {
                let todo = snapshot.devices.filter { $0.stage == index && $0.state == .pending }
                if todo.isEmpty { break }
                let status = snapshot.stages[index]
                if Double(status.failed) > plan.abortFailureRate * Double(status.devices) { break }
                round += 1
                if round > 1 {
                    do {
                        try await engine.clock.sleep(for: backoff.backoff(afterAttempt: round - 1))
                    } catch {
                        throw OTAError(.cancelled, "stopped during the campaign's backoff")
                    }
                }
                observe?(.round(stage: index, round: round, devices: todo.count))
                try await attempt(todo, plan: plan, store: store, fleet: fleet, observe: observe)
                snapshot = try store.snapshot()
            }
            let status = snapshot.stages[index]
            let failedShare = Double(status.failed) / Double(status.devices)
            let updatedShare = Double(status.completed) / Double(status.devices)
            var reason: String?
            if failedShare > plan.abortFailureRate {
                reason =
                    "stage \(stage.name): \(status.failed) of \(status.devices) devices failed (\(percent(failedShare))), above the abort threshold of \(percent(plan.abortFailureRate))"
            } else if updatedShare < plan.successThreshold {
                reason =
                    "stage \(stage.name): \(status.completed) of \(status.devices) devices updated (\(percent(updatedShare))), below the \(percent(plan.successThreshold)) needed to go on"
            }
            if let reason {
                let detail = index + 1 < plan.stages.count ? reason + "; later stages not started" : reason
                try store.finish(.aborted, detail: detail)
                observe?(.ended(.aborted, detail: detail))
                return try store.snapshot()
            }
        }
        let detail = "\(snapshot.devices.filter { $0.state == .completed }.count) of \(snapshot.devices.count) devices updated"
        try store.finish(.completed, detail: detail)
        observe?(.ended(.completed, detail: detail))
        return try store.snapshot()
    }

    /// One round: one attempt on each of `records`, recorded as they start and end.
    private func attempt(
        _ records: [CampaignDeviceRecord], plan: CampaignPlan, store: any CampaignStore, fleet: any CampaignFleet,
        observe: (@Sendable (Event) -> Void)?
    ) async throws(OTAError) {
        var devices: [FleetDevice] = []
        for record in records { devices.append(try fleet.device(record.address)) }
        let previous = records.map(\.attempts)
        let maximum = plan.maximumAttempts
        let gateway = self.gateway
        // The scheduler's observer cannot throw: the first store failure stops the round (its
        // updates are cancelled) and is thrown once the scheduler has returned.
        let failure = StoreFailure()
        let scheduler = FleetScheduler(engine: engine, policy: FleetPolicy(maximumAttempts: 1))
        // A child task (not `Task {}`): it keeps the caller's executor (a simulation's), and a
        // store failure cancels it alone.
        let adapters = fleet.adapters
        async let round = scheduler.run(devices, adapters: adapters) { event in
            guard failure.error == nil else { return }
            do throws(OTAError) {
                switch event {
                case .started(let device, _, let adapter):
                    let attempt = previous[device] + 1
                    try store.attemptStarted(device: records[device].address, attempt: attempt, gateway: gateway)
                    observe?(.started(device: records[device].address, attempt: attempt, adapter: adapter))
                case .finished(let device, _, let result):
                    let attempt = previous[device] + 1
                    let address = records[device].address
                    // What the device holds must be kept before its outcome is recorded.
                    try fleet.attemptEnded(address)
                    let outcome: CampaignAttemptOutcome
                    switch result {
                    case .success(let report):
                        outcome = .completed(detail: "\(report.bytesSent) bytes in \(report.duration.humanReadable)")
                    case .failure(let error):
                        outcome = .failed(message: error.message, final: attempt >= maximum)
                    }
                    try store.attemptFinished(device: address, attempt: attempt, outcome: outcome)
                    observe?(.finished(device: address, attempt: attempt, outcome: outcome))
                }
            } catch {
                failure.error = error
                withUnsafeCurrentTask { $0?.cancel() }
            }
        }
        _ = await round
        if let error = failure.error { throw error }
        if Task.isCancelled { throw OTAError(.cancelled, "the campaign was stopped") }
    }

    private func percent(_ share: Double) -> String {
        let value = share * 100
        return (value == value.rounded() ? "\(Int(value))" : String(oneDecimal: value)) + "%"
    }
}

/// The devices a campaign reaches: a ``FleetDevice`` per address, the adapters, and what must
/// be kept when an attempt ends.
public protocol CampaignFleet: Sendable {
    /// The adapters the devices are reached through.
    var adapters: [FleetAdapter] { get }

    /// The device at `address`, ready to update.
    ///
    /// - Throws: ``OTAError`` when the address is not one this fleet reaches.
    func device(_ address: String) throws(OTAError) -> FleetDevice

    /// Called when an attempt on `address` ends, before its outcome is recorded: keep what must
    /// survive the process (a simulated device's flash). A real device keeps its own.
    func attemptEnded(_ address: String) throws(OTAError)
}

extension CampaignFleet {
    /// Nothing to keep: the device holds its own flash.
    public func attemptEnded(_ address: String) throws(OTAError) {}
}

/// The first error a round's observer met, read once the round is over.
private final class StoreFailure: Sendable {
    private let first = Mutex<OTAError?>(nil)

    var error: OTAError? {
        get { first.withLock { $0 } }
        set { first.withLock { $0 = $0 ?? newValue } }
    }
}
