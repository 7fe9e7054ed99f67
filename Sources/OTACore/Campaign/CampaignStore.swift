import Foundation

/// Where a campaign's state lives, so that it survives the process: the plan, each device's
/// state, attempts and lease, and a history of every transition.
///
/// Every call is one durable step: when it returns, what it recorded is committed, so a process
/// killed at any point leaves the store at a state it had.
///
/// Several gateways (processes, hosts) can share one campaign: a gateway ``claim(stage:limit:gateway:lease:)``s
/// devices, which leases them to it until the lease expires; it keeps them with
/// ``renew(gateway:lease:)`` (a heartbeat) while it updates them, and an attempt's end releases
/// the device. A device whose lease expired (its gateway was killed) is claimed by another
/// gateway, and the attempt its gateway left open counts as failed. A gateway that no longer
/// holds a device's lease cannot record an attempt on it: the store refuses. Gateways are told
/// apart by name: a gateway restarted under the same name takes its own leases back at once, so
/// two gateways running at the same time need different names.
///
/// Calls are synchronous: ``CampaignRunner`` makes them from inside a simulation's executor, so
/// virtual time does not move while a transaction commits.
public protocol CampaignStore: Sendable {
    /// The campaign as recorded.
    ///
    /// - Throws: ``OTAError/Code/storage``.
    func snapshot() throws(OTAError) -> CampaignSnapshot

    /// Where the campaign and its stages are: a few counts, read between batches by every
    /// gateway (a default reads the whole ``snapshot()``).
    ///
    /// - Throws: ``OTAError/Code/storage``.
    func progress() throws(OTAError) -> CampaignProgress

    /// Leases up to `limit` devices of stage `stage` (its index) to `gateway` for `lease`: those
    /// pending with no lease, an expired one, or one held under `gateway`'s own name, fewest
    /// attempts first. A device found `updating` there had its attempt left open by a stopped
    /// gateway: that attempt is recorded as failed first (and a device with no attempt left is
    /// failed for good, not returned). Nothing is claimed once the campaign has ended.
    ///
    /// With `includingDeferred`, devices deferred for their battery (``CampaignDeviceState/deferred``)
    /// are claimed too, for another look at their battery; without, they are left alone.
    ///
    /// - Returns: the devices now leased to `gateway`, each pending or deferred.
    func claim(stage: Int, limit: Int, gateway: String, lease: Duration, includingDeferred: Bool) throws(OTAError) -> [CampaignDeviceRecord]

    /// Extends every unexpired lease `gateway` holds to `lease` from now: its heartbeat.
    ///
    /// - Returns: how many leases were renewed.
    @discardableResult
    func renew(gateway: String, lease: Duration) throws(OTAError) -> Int

    /// Records that attempt `attempt` (1 for the first) on `device` starts, by `gateway`.
    ///
    /// - Throws: ``OTAError/Code/storage`` when `gateway` does not hold the device's lease (it
    ///   expired and another gateway may have the device).
    func attemptStarted(device: String, attempt: Int, gateway: String) throws(OTAError)

    /// Records how that attempt ended: the device is then completed, failed for good, or
    /// pending again for another attempt; its lease is released.
    ///
    /// - Throws: ``OTAError/Code/storage`` when `gateway` no longer holds the device's lease.
    func attemptFinished(device: String, attempt: Int, gateway: String, outcome: CampaignAttemptOutcome) throws(OTAError)

    /// Records that attempt `attempt` on `device` did not go on because the device's battery is
    /// below the campaign's minimum (read before any byte was written): the device is
    /// ``CampaignDeviceState/deferred``, the attempt is not counted (its attempts go back to
    /// `attempt - 1`), the level is kept, and its lease is released. A `deferred` row in the
    /// history has the level and the minimum ("battery 12% < 30%").
    ///
    /// - Throws: ``OTAError/Code/storage`` when `gateway` no longer holds the device's lease.
    func attemptDeferred(device: String, attempt: Int, gateway: String, battery: BatteryBelowMinimum) throws(OTAError)

    /// Records that the campaign ended; when several gateways finish it, the first one's verdict
    /// is kept.
    func finish(_ phase: CampaignPhase, detail: String, gateway: String) throws(OTAError)

    /// Every transition, oldest first.
    func history() throws(OTAError) -> [CampaignHistoryEntry]
}

/// The wall clock leases are measured on, shared by every gateway of a campaign (unlike a
/// simulation's virtual clock), and the waits for other gateways. Injected so that tests move it
/// by hand.
public protocol CampaignLeaseClock: Sendable {
    /// Now.
    var now: Date { get }
    /// Waits `duration` of this clock.
    func sleep(for duration: Duration) async throws
}

/// The system's wall clock: ``Date()``, and real sleeps (on ``RealTimeClock``, whose cancelled
/// sleeps let their timer go at once).
public struct WallLeaseClock: CampaignLeaseClock {
    private let clock = RealTimeClock()

    /// Creates the wall clock.
    public init() {}

    public var now: Date { Date() }

    public func sleep(for duration: Duration) async throws {
        try await clock.sleep(for: duration)
    }
}

/// Where a campaign is.
public enum CampaignPhase: String, Sendable, Hashable {
    /// Devices are still to be updated.
    case running
    /// Every stage has been run and passed its success threshold.
    case completed
    /// A stage failed more than the abort threshold allows, or updated fewer than the success
    /// threshold asks; later stages were not started.
    case aborted
}

/// Where one device of a campaign is.
public enum CampaignDeviceState: String, Sendable, Hashable {
    /// Not updated yet; another attempt is allowed.
    case pending
    /// An attempt started and has not ended (when read after a restart: the process stopped
    /// during it).
    case updating
    /// The device accepted the image.
    case completed
    /// Every allowed attempt failed.
    case failed
    /// Its battery was below the campaign's minimum when an attempt was about to write: not
    /// failed, no attempt spent; retried later in the run, or in a later run. Reported as
    /// skipped when a run ends with it still low.
    case deferred
}

/// How an attempt ended.
public enum CampaignAttemptOutcome: Sendable, Hashable {
    /// The device accepted the image.
    case completed(detail: String)
    /// The attempt failed; `final` when no attempt is left.
    case failed(message: String, final: Bool)
}

/// One device as the store records it.
public struct CampaignDeviceRecord: Sendable, Hashable {
    /// Its address.
    public var address: String
    /// The index of its stage in the plan.
    public var stage: Int
    /// Where it is.
    public var state: CampaignDeviceState
    /// Attempts started so far.
    public var attempts: Int
    /// Why the last failed attempt failed.
    public var lastError: String?
    /// The gateway that holds its lease, if one does (the lease may have expired).
    public var gateway: String?
    /// The battery level its last deferral read, 0–100 %; `nil` when it was never deferred.
    public var battery: Int?
    /// Why it was selected (``CampaignSelectionRecord/reasons``), when the plan records it.
    public var selectedBecause: String?

    /// Creates a record.
    public init(
        address: String, stage: Int, state: CampaignDeviceState, attempts: Int, lastError: String?, gateway: String? = nil, battery: Int? = nil,
        selectedBecause: String? = nil
    ) {
        self.battery = battery
        self.selectedBecause = selectedBecause
        self.address = address
        self.stage = stage
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
        self.gateway = gateway
    }
}

/// A campaign as recorded: its plan, where it is, and every device.
public struct CampaignSnapshot: Sendable, Hashable {
    /// What was planned.
    public var plan: CampaignPlan
    /// Where the campaign is.
    public var phase: CampaignPhase
    /// Why it ended, once it has.
    public var phaseDetail: String?
    /// Every device, in the plan's order.
    public var devices: [CampaignDeviceRecord]

    /// Creates a snapshot.
    public init(plan: CampaignPlan, phase: CampaignPhase, phaseDetail: String?, devices: [CampaignDeviceRecord]) {
        self.plan = plan
        self.phase = phase
        self.phaseDetail = phaseDetail
        self.devices = devices
    }

    /// A snapshot from what a store read back: the plan's fields, the stages' names in order, and
    /// every device in the plan's order, each naming its stage. The plan is checked again.
    ///
    /// - Parameter damaged: the store's error for what it holds that does not fit ("a device
    ///   row", or why ``CampaignPlan`` refuses the plan).
    /// - Throws: what `damaged` makes.
    ///
    /// The selection's reasons are read from each device's ``CampaignDeviceRecord/selectedBecause``.
    public init(
        restoring name: String, protocolName: String, image: CampaignImage, maximumAttempts: Int, abortFailureRate: Double,
        successThreshold: Double, stageNames: [String], devices: [CampaignDeviceRecord], phase: CampaignPhase, phaseDetail: String?,
        selection: (criteria: String, discovered: Int)? = nil, minimumBattery: Int? = nil, window: String? = nil, damaged: (String) -> OTAError
    ) throws(OTAError) {
        var stageDevices = Array(repeating: [String](), count: stageNames.count)
        for device in devices {
            guard stageDevices.indices.contains(device.stage) else { throw damaged("a device row") }
            stageDevices[device.stage].append(device.address)
        }
        let plan: CampaignPlan
        do throws(OTAError) {
            plan = try CampaignPlan(
                name: name, protocolName: protocolName, image: image,
                stages: zip(stageNames, stageDevices).map { CampaignStage(name: $0, devices: $1) }, maximumAttempts: maximumAttempts,
                abortFailureRate: abortFailureRate, successThreshold: successThreshold,
                selection: selection.map { selection in
                    CampaignSelectionRecord(
                        criteria: selection.criteria, discovered: selection.discovered,
                        reasons: Dictionary(devices.compactMap { device in device.selectedBecause.map { (device.address, $0) } }) { first, _ in first })
                }, minimumBattery: minimumBattery, window: try window.map { text throws(OTAError) in try CampaignWindow(parsing: text) })
        } catch {
            throw damaged(error.message)
        }
        self.init(plan: plan, phase: phase, phaseDetail: phaseDetail, devices: devices)
    }

    /// How far each stage is.
    public var stages: [CampaignStageStatus] {
        plan.stages.indices.map { index in
            let records = devices.filter { $0.stage == index }
            return CampaignStageStatus(
                name: plan.stages[index].name, devices: records.count, completed: records.filter { $0.state == .completed }.count,
                failed: records.filter { $0.state == .failed }.count, deferred: records.filter { $0.state == .deferred }.count)
        }
    }
}

/// How far one stage is.
public struct CampaignStageStatus: Sendable, Hashable {
    /// The stage's name.
    public var name: String
    /// Its devices.
    public var devices: Int
    /// Devices updated.
    public var completed: Int
    /// Devices that failed every allowed attempt.
    public var failed: Int
    /// Devices deferred for their battery (part of ``remaining``).
    public var deferred: Int
    /// Devices still to update, the deferred ones included.
    public var remaining: Int { devices - completed - failed }

    /// Describes a stage's progress.
    public init(name: String, devices: Int, completed: Int, failed: Int, deferred: Int = 0) {
        self.deferred = deferred
        self.name = name
        self.devices = devices
        self.completed = completed
        self.failed = failed
    }
}

/// Where a campaign and each of its stages are, without every device's record: what a runner
/// reads between batches.
public struct CampaignProgress: Sendable, Hashable {
    /// Where the campaign is.
    public var phase: CampaignPhase
    /// How far each stage is, in the plan's order.
    public var stages: [CampaignStageStatus]

    /// Describes a campaign's progress.
    public init(phase: CampaignPhase, stages: [CampaignStageStatus]) {
        self.phase = phase
        self.stages = stages
    }
}

extension CampaignStore {
    /// Read from a whole ``snapshot()``; a store with a cheaper count overrides it.
    public func progress() throws(OTAError) -> CampaignProgress {
        let snapshot = try snapshot()
        return CampaignProgress(phase: snapshot.phase, stages: snapshot.stages)
    }

    /// Claims pending devices only, leaving deferred ones alone
    /// (``claim(stage:limit:gateway:lease:includingDeferred:)``).
    public func claim(stage: Int, limit: Int, gateway: String, lease: Duration) throws(OTAError) -> [CampaignDeviceRecord] {
        try claim(stage: stage, limit: limit, gateway: gateway, lease: lease, includingDeferred: false)
    }
}

/// One transition in a campaign's history.
public struct CampaignHistoryEntry: Sendable, Hashable {
    /// When it was recorded (the lease clock of the store: the database server's clock for a
    /// shared store).
    public var at: Date
    /// The device, for a device's transition.
    public var device: String?
    /// What happened: `created`, `leased`, `renewed`, `taken-over`, `started`, `completed`,
    /// `failed`, `retry`, `deferred` (its detail "battery 12% < 30%"), `campaign-completed`,
    /// `campaign-aborted`.
    public var event: String
    /// The attempt, for a device's transition.
    public var attempt: Int?
    /// The reason or the result, or the previous gateway for `taken-over`.
    public var detail: String?
    /// The gateway that made it.
    public var gateway: String?
    /// For `leased` and `renewed`: until when the device is leased to ``gateway``.
    public var leaseUntil: Date?

    /// Creates an entry.
    public init(
        at: Date, device: String?, event: String, attempt: Int?, detail: String?, gateway: String? = nil, leaseUntil: Date? = nil
    ) {
        self.at = at
        self.device = device
        self.event = event
        self.attempt = attempt
        self.detail = detail
        self.gateway = gateway
        self.leaseUntil = leaseUntil
    }
}
