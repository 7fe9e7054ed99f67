import Foundation
import Synchronization

/// Runs a campaign from its store to its end, and can be stopped at any point: run it again
/// with the same store and it goes on from what the store recorded.
///
/// The runner claims a few devices of the current stage at a time from the store (a lease, so
/// several gateways can share a campaign: see ``CampaignStore``) and updates them through the
/// ``FleetScheduler`` (each adapter within its connection limit), one attempt each; a device
/// that failed goes back to the store and is claimed again, fewest attempts first, after a
/// backoff, until the plan's attempts are spent. Every attempt's start and end is recorded in
/// the store before the run goes on, so a device is never forgotten nor, once recorded as
/// updated, updated again. An attempt a killed process left open counts as a failed attempt
/// ("the previous run stopped during this attempt") and is retried. A stage ends when every one
/// of its devices has ended, on any gateway: until then the runner waits on the lease clock for
/// the other gateways' devices (or their leases to expire).
///
/// While it runs, something must renew its leases: a ``CampaignHeartbeat`` on the lease clock,
/// outside the simulation.
public struct CampaignRunner: Sendable {
    /// The engine each update runs with; its clock is the run's clock.
    public var engine: UpdateEngine
    /// Backoff before a batch of retries (its attempt limit is not used: the plan's is).
    public var backoff: FleetPolicy
    /// Who runs it, for the leases and the history ("gateway-1", a host name); unique among the
    /// gateways running the campaign at the same time.
    public var gateway: String
    /// The clock leases are measured on, and the waits for other gateways.
    public var leaseClock: any CampaignLeaseClock
    /// How long a claimed device stays leased without a heartbeat.
    public var lease: Duration
    /// Devices claimed at a time; `nil`: twice the adapters' connections. With a window, at most
    /// the adapters' connections, so that every claimed device starts before the window is
    /// looked at again.
    public var claimLimit: Int?
    /// How many more times, per stage and run, the devices deferred for their battery are looked
    /// at once the stage has nothing else to start (default 2).
    public var batteryRechecks = 2
    /// The wait, on the engine's clock, before looking again at devices this run deferred
    /// (default 10 minutes).
    public var batteryRecheckDelay: Duration = .seconds(600)

    /// Creates a runner.
    public init(
        engine: UpdateEngine, backoff: FleetPolicy = FleetPolicy(), gateway: String, leaseClock: any CampaignLeaseClock = WallLeaseClock(),
        lease: Duration = .seconds(30), claimLimit: Int? = nil
    ) {
        self.engine = engine
        self.backoff = backoff
        self.gateway = gateway
        self.leaseClock = leaseClock
        self.lease = lease
        self.claimLimit = claimLimit
    }

    /// What the runner did, as it happens.
    public enum Event: Sendable {
        /// Stage `stage` (its index) starts a batch (`round`, counted per stage in this run) of
        /// attempts on `devices` claimed devices.
        case round(stage: Int, round: Int, devices: Int)
        /// An attempt on `device` starts.
        case started(device: String, attempt: Int, adapter: String)
        /// That attempt ended.
        case finished(device: String, attempt: Int, outcome: CampaignAttemptOutcome)
        /// That attempt did not go on: the battery is below the plan's minimum; the device is
        /// deferred, no attempt spent.
        case deferred(device: String, attempt: Int, battery: BatteryBelowMinimum)
        /// The run stopped before the campaign ended; it is still running (run again later).
        case stopped(CampaignRunStop, detail: String)
        /// The campaign ended.
        case ended(CampaignPhase, detail: String)
    }

    /// Runs the campaign in `store` on `fleet` until it completes or aborts, or the run stops
    /// short of that (``execute(_:fleet:observe:)`` says why).
    ///
    /// - Parameters:
    ///   - fleet: the devices, by address, and the adapters that reach them.
    ///   - observe: receives every ``Event``.
    /// - Returns: the campaign as recorded at the end.
    /// - Throws: ``OTAError/Code/storage`` when the store fails or a lease was lost (the
    ///   campaign can be run again once it works), or what `fleet` throws for a device it
    ///   cannot make.
    @concurrent
    public func run(
        _ store: any CampaignStore, fleet: any CampaignFleet, observe: (@Sendable (Event) -> Void)? = nil
    ) async throws(OTAError) -> CampaignSnapshot {
        try await execute(store, fleet: fleet, observe: observe).snapshot
    }

    /// Runs the campaign in `store` on `fleet` until it completes or aborts, or its window
    /// closes, or only devices deferred for their battery are left after their rechecks.
    ///
    /// Outside the plan's window nothing starts; once it closes no attempt starts (those under
    /// way finish). A device whose battery the preflight reads below the plan's minimum is
    /// deferred (no attempt spent) and looked at again, up to ``batteryRechecks`` times, once
    /// its stage has nothing else to start, after ``batteryRecheckDelay``. A stage that misses its
    /// success threshold only because of deferred devices holds the campaign: it stays running
    /// (decision 0044).
    ///
    /// - Returns: the campaign as recorded, and why the run stopped before the campaign ended.
    /// - Throws: as ``run(_:fleet:observe:)``.
    public func execute(
        _ store: any CampaignStore, fleet: any CampaignFleet, observe: (@Sendable (Event) -> Void)? = nil
    ) async throws(OTAError) -> CampaignRunResult {
        let initial = try store.snapshot()
        guard initial.phase == .running else { return CampaignRunResult(snapshot: initial, stop: nil) }
        let plan = initial.plan
        var progress = CampaignProgress(phase: initial.phase, stages: initial.stages)
        let connections = fleet.adapters.reduce(0) { $0 + $1.connectionLimit }
        var limit = max(1, claimLimit ?? 2 * connections)
        if plan.window != nil {
            // Every device of a batch starts at once, the window checked before it: none waits
            // in the batch for a connection and starts after the window closed.
            limit = max(1, min(limit, connections))
        }
        // Waits for other gateways are short, so a simulation sees the wake-ups.
        let poll = min(lease / 4, .milliseconds(500))
        var engine = self.engine
        if let minimum = plan.minimumBattery {
            engine.configuration.preflight.readsStandardServices = true
            engine.configuration.preflight.minimumBattery = PreflightPolicy.BatteryRequirement(percent: minimum, source: "the campaign's --min-battery")
        }
        var startedAny = false
        /// Ends the run early: the campaign stays running.
        func stopped(_ stop: CampaignRunStop) throws(OTAError) -> CampaignRunResult {
            let result = try store.snapshot()
            observe?(.stopped(stop, detail: stop.detail(result)))
            return CampaignRunResult(snapshot: result, stop: stop)
        }
        for (index, stage) in plan.stages.enumerated() {
            var round = 0
            var rechecks = 0
            // Whether this run deferred a device of this stage: its recheck waits first.
            let deferredHere = DeferralFlag()
            while true {
                let status = progress.stages[index]
                if status.remaining == 0 { break }
                if Double(status.failed) > plan.abortFailureRate * Double(status.devices) { break }
                let onlyDeferred = status.remaining == status.deferred
                if onlyDeferred {
                    guard rechecks < batteryRechecks else { break }
                    rechecks += 1
                    if deferredHere.isSet {
                        do {
                            try await engine.clock.sleep(for: batteryRecheckDelay)
                        } catch {
                            throw OTAError(.cancelled, "stopped while waiting to look at low batteries again")
                        }
                    }
                }
                if let window = plan.window {
                    let now = leaseClock.now
                    if !window.contains(now) {
                        let opens = window.opening(after: now)
                        return try stopped(startedAny ? .windowClosed(window: window, opens: opens) : .outsideWindow(window: window, opens: opens))
                    }
                }
                let claimed = try store.claim(stage: index, limit: limit, gateway: gateway, lease: lease, includingDeferred: onlyDeferred)
                for record in claimed where record.lastError == Self.stoppedDuringAttempt {
                    // The open attempt the claim closed (this gateway's previous run, or a gateway whose lease expired).
                    observe?(
                        .finished(device: record.address, attempt: record.attempts, outcome: .failed(message: Self.stoppedDuringAttempt, final: false)))
                }
                if claimed.isEmpty {
                    progress = try store.progress()
                    guard progress.phase == .running else { return CampaignRunResult(snapshot: try store.snapshot(), stop: nil) }
                    let status = progress.stages[index]
                    if status.remaining == 0 { break }
                    if status.remaining == status.deferred { continue }
                    // Other gateways hold the rest: wait for them, or for their leases to expire.
                    do {
                        try await leaseClock.sleep(for: poll)
                    } catch {
                        throw OTAError(.cancelled, "stopped while waiting for the other gateways")
                    }
                    progress = try store.progress()
                    continue
                }
                round += 1
                if let fewest = claimed.map(\.attempts).min(), fewest > 0 {
                    do {
                        try await engine.clock.sleep(for: backoff.backoff(afterAttempt: fewest))
                    } catch {
                        throw OTAError(.cancelled, "stopped during the campaign's backoff")
                    }
                }
                observe?(.round(stage: index, round: round, devices: claimed.count))
                startedAny = true
                try await attempt(claimed, plan: plan, engine: engine, store: store, fleet: fleet, deferred: deferredHere, observe: observe)
                progress = try store.progress()
                guard progress.phase == .running else { return CampaignRunResult(snapshot: try store.snapshot(), stop: nil) }
            }
            let status = progress.stages[index]
            let failedShare = Double(status.failed) / Double(status.devices)
            let updatedShare = Double(status.completed) / Double(status.devices)
            var reason: String?
            if failedShare > plan.abortFailureRate {
                reason =
                    "stage \(stage.name): \(status.failed) of \(status.devices) devices failed (\(percent(failedShare))), above the abort threshold of \(percent(plan.abortFailureRate))"
            } else if updatedShare < plan.successThreshold {
                if status.deferred > 0, Double(status.completed + status.deferred) >= plan.successThreshold * Double(status.devices) {
                    // Short of the threshold only by devices waiting for their batteries: hold, do not abort.
                    return try stopped(.batteryHeld(stage: index))
                }
                let skipped = status.deferred > 0 ? ", \(status.deferred) skipped for their battery" : ""
                reason =
                    "stage \(stage.name): \(status.completed) of \(status.devices) devices updated (\(percent(updatedShare)))\(skipped), below the \(percent(plan.successThreshold)) needed to go on"
            }
            if let reason {
                let detail = index + 1 < plan.stages.count ? reason + "; later stages not started" : reason
                try store.finish(.aborted, detail: detail, gateway: gateway)
                let result = try store.snapshot()
                observe?(.ended(result.phase, detail: result.phaseDetail ?? detail))
                return CampaignRunResult(snapshot: result, stop: nil)
            }
        }
        if progress.stages.contains(where: { $0.deferred > 0 }) {
            return try stopped(.batteryHeld(stage: nil))
        }
        let detail = "\(progress.stages.reduce(0) { $0 + $1.completed }) of \(plan.devices.count) devices updated"
        try store.finish(.completed, detail: detail, gateway: gateway)
        let result = try store.snapshot()
        observe?(.ended(result.phase, detail: result.phaseDetail ?? detail))
        return CampaignRunResult(snapshot: result, stop: nil)
    }

    /// What the history and the device record say of an attempt its gateway left open.
    public static let stoppedDuringAttempt = "the previous run stopped during this attempt"

    /// One round: one attempt on each of `records`, recorded as they start and end; an attempt
    /// the preflight refused for the battery is recorded as deferred.
    private func attempt(
        _ records: [CampaignDeviceRecord], plan: CampaignPlan, engine: UpdateEngine, store: any CampaignStore, fleet: any CampaignFleet,
        deferred: DeferralFlag, observe: (@Sendable (Event) -> Void)?
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
                    if case .failure(let error) = result, let battery = BatteryBelowMinimum.cause(of: error) {
                        // Nothing was written: not a failure, and no attempt spent.
                        try store.attemptDeferred(device: address, attempt: attempt, gateway: gateway, battery: battery)
                        deferred.set()
                        observe?(.deferred(device: address, attempt: attempt, battery: battery))
                        return
                    }
                    let outcome: CampaignAttemptOutcome
                    switch result {
                    case .success(let report):
                        outcome = .completed(detail: Self.completedDetail(report))
                    case .failure(let error):
                        outcome = .failed(message: error.message, final: attempt >= maximum)
                    }
                    try store.attemptFinished(device: address, attempt: attempt, gateway: gateway, outcome: outcome)
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

    private func percent(_ share: Double) -> String { CampaignPlan.percentText(share * 100) }

    /// A completed attempt's detail in the history: "N bytes sent from byte R in T", R the bytes
    /// the device held when the attempt started (a resume, after a killed gateway or run).
    public static func completedDetail(_ report: UpdateReport) -> String {
        "\(report.bytesSent) bytes sent from byte \(report.bytesHeldAtStart) in \(report.duration.humanReadable)"
    }

    /// The bytes sent and the byte the attempt started from, read back from a
    /// ``completedDetail(_:)``; `nil` for another text.
    public static func sentAndResumedFrom(_ detail: String) -> (sent: Int, from: Int)? {
        let words = detail.split(separator: " ")
        guard words.count >= 6, words[1] == "bytes", words[2] == "sent", words[3] == "from", words[4] == "byte",
            let sent = Int(words[0]), let from = Int(words[5])
        else { return nil }
        return (sent, from)
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

/// What a run did: the campaign as recorded at its end, and why the run stopped before the
/// campaign ended, if it did.
public struct CampaignRunResult: Sendable, Hashable {
    /// The campaign as recorded.
    public var snapshot: CampaignSnapshot
    /// Why the run stopped with the campaign still running; `nil` when the campaign ended.
    public var stop: CampaignRunStop?

    /// Describes a run.
    public init(snapshot: CampaignSnapshot, stop: CampaignRunStop?) {
        self.snapshot = snapshot
        self.stop = stop
    }
}

/// Why a run stopped with its campaign still running; running it again later goes on.
public enum CampaignRunStop: Sendable, Hashable {
    /// The run began outside the plan's window and started nothing.
    case outsideWindow(window: CampaignWindow, opens: Date)
    /// The window closed during the run: nothing started after it (attempts under way finished).
    case windowClosed(window: CampaignWindow, opens: Date)
    /// Only devices deferred for their battery are left (of stage `stage` when it holds the
    /// campaign short of its success threshold; `nil` when every stage passed): they are
    /// reported skipped.
    case batteryHeld(stage: Int?)

    /// One line for people, given the campaign as the run left it.
    public func detail(_ snapshot: CampaignSnapshot) -> String {
        switch self {
        case .outsideWindow(let window, let opens):
            return "outside the campaign's window \(window): nothing started; it opens at \(window.format(opens))"
        case .windowClosed(let window, let opens):
            let updated = snapshot.devices.filter { $0.state == .completed }.count
            return
                "the campaign's window \(window) closed: no attempt started after it, \(updated) of \(snapshot.devices.count) devices updated so far; it opens again at \(window.format(opens))"
        case .batteryHeld(let stage):
            let skipped = snapshot.devices.filter { $0.state == .deferred }.count
            let minimum = snapshot.plan.minimumBattery.map { " below \($0)%" } ?? ""
            let updated = snapshot.devices.filter { $0.state == .completed }.count
            let held =
                stage.map { index in
                    "stage \(snapshot.plan.stages[index].name) holds (short of its \(CampaignPlan.percentText(snapshot.plan.successThreshold * 100)) only by skipped devices); "
                } ?? ""
            return
                "\(held)\(updated) of \(snapshot.devices.count) devices updated, \(skipped) skipped for their battery\(minimum): run again once they have charged"
        }
    }
}

/// Whether a round deferred a device, read once the round is over.
private final class DeferralFlag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    func set() { value.withLock { $0 = true } }
}

/// The first error a round's observer met, read once the round is over.
private final class StoreFailure: Sendable {
    private let first = Mutex<OTAError?>(nil)

    var error: OTAError? {
        get { first.withLock { $0 } }
        set { first.withLock { $0 = $0 ?? newValue } }
    }
}
