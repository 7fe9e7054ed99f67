import Foundation

/// Where a campaign's state lives, so that it survives the process: the plan, each device's
/// state and attempts, and a history of every transition.
///
/// Every call is one durable step: when it returns, what it recorded is on disk (a transaction
/// committed), so a process killed at any point leaves the store at a state it had. Calls are
/// synchronous and made one at a time by ``CampaignRunner``.
public protocol CampaignStore: Sendable {
    /// The campaign as recorded.
    ///
    /// - Throws: ``OTAError/Code/storage``.
    func snapshot() throws(OTAError) -> CampaignSnapshot

    /// Records that attempt `attempt` (1 for the first) on `device` starts, by `gateway`.
    func attemptStarted(device: String, attempt: Int, gateway: String) throws(OTAError)

    /// Records how that attempt ended: the device is then completed, failed for good, or
    /// pending again for another attempt.
    func attemptFinished(device: String, attempt: Int, outcome: CampaignAttemptOutcome) throws(OTAError)

    /// Records that the campaign ended.
    func finish(_ phase: CampaignPhase, detail: String) throws(OTAError)

    /// Every transition, oldest first.
    func history() throws(OTAError) -> [CampaignHistoryEntry]
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

    /// Creates a record.
    public init(address: String, stage: Int, state: CampaignDeviceState, attempts: Int, lastError: String?) {
        self.address = address
        self.stage = stage
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
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

    /// How far each stage is.
    public var stages: [CampaignStageStatus] {
        plan.stages.indices.map { index in
            let records = devices.filter { $0.stage == index }
            return CampaignStageStatus(
                name: plan.stages[index].name, devices: records.count, completed: records.filter { $0.state == .completed }.count,
                failed: records.filter { $0.state == .failed }.count)
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
    /// Devices still to update.
    public var remaining: Int { devices - completed - failed }
}

/// One transition in a campaign's history.
public struct CampaignHistoryEntry: Sendable, Hashable {
    /// When it was recorded (the wall clock of the process that recorded it).
    public var at: Date
    /// The device, for a device's transition.
    public var device: String?
    /// What happened: `created`, `started`, `completed`, `failed`, `retry`, `campaign-completed`,
    /// `campaign-aborted`.
    public var event: String
    /// The attempt, for a device's transition.
    public var attempt: Int?
    /// The gateway that made it, or the reason.
    public var detail: String?

    /// Creates an entry.
    public init(at: Date, device: String?, event: String, attempt: Int?, detail: String?) {
        self.at = at
        self.device = device
        self.event = event
        self.attempt = attempt
        self.detail = detail
    }
}
