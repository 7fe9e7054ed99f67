import Foundation
import OTACore
import Synchronization

/// A campaign kept in one SQLite file: the embedded store for gateways on one host, no server.
///
/// Each call is one transaction (`BEGIN IMMEDIATE`: one writer at a time, other processes wait
/// up to 5 s), committed with `synchronous=FULL` in WAL mode before it returns, so a process
/// killed at any instant leaves the file at a state it had. Every change of a device, each
/// lease and each renewal included, is also a row in the `history` table. Leases are measured
/// on the injected lease clock (the wall clock by default), which every process sharing the
/// file must share.
///
/// ```swift
/// let store = try SQLiteCampaignStore.create(at: "locks.campaign", plan: plan)
/// let result = try await CampaignRunner(engine: engine, gateway: "pi-1").run(store, fleet: fleet)
/// ```
public final class SQLiteCampaignStore: CampaignStore {
    private let database: Mutex<SQLiteDatabase>
    private let clock: any CampaignLeaseClock
    /// The file.
    public let path: String

    /// The layout this code writes and reads. 2: leases; 3: the target selection, the minimum
    /// battery, the window, and deferred devices with their battery level. A layout-2 file is
    /// brought to 3 when it is opened (its new columns empty: no selection, battery or window
    /// recorded); any other version is refused.
    static let schemaVersion = 3

    private init(database: sending SQLiteDatabase, clock: any CampaignLeaseClock) {
        path = database.path
        self.clock = clock
        self.database = Mutex(database)
    }

    /// Creates the campaign file at `path` with `plan`, every device pending.
    ///
    /// - Throws: ``OTAError/Code/storage`` when the file exists already or cannot be written.
    public static func create(
        at path: String, plan: CampaignPlan, leaseClock: any CampaignLeaseClock = WallLeaseClock()
    ) throws(OTAError) -> SQLiteCampaignStore {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw OTAError(.storage, "\(path) exists already: run the campaign in it with 'ota campaign run', or choose another file")
        }
        let database = try SQLiteDatabase(path: path, create: true)
        try database.execute(
            """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = FULL;
            CREATE TABLE campaign (
                id INTEGER PRIMARY KEY CHECK (id = 1), schema INTEGER NOT NULL, name TEXT NOT NULL, protocol TEXT NOT NULL,
                image_path TEXT NOT NULL, image_size INTEGER NOT NULL, image_sha256 TEXT NOT NULL, maximum_attempts INTEGER NOT NULL,
                abort_failure_rate REAL NOT NULL, success_threshold REAL NOT NULL, phase TEXT NOT NULL, phase_detail TEXT,
                selection TEXT, discovered INTEGER, minimum_battery INTEGER, time_window TEXT);
            CREATE TABLE stage (number INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE device (
                position INTEGER PRIMARY KEY, address TEXT NOT NULL UNIQUE, stage INTEGER NOT NULL REFERENCES stage(number),
                state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, lease_owner TEXT, lease_expires REAL,
                battery INTEGER, selected_because TEXT);
            CREATE INDEX device_claim ON device (stage, state, attempts, position);
            CREATE TABLE history (
                id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, device TEXT, event TEXT NOT NULL, attempt INTEGER, detail TEXT,
                gateway TEXT, lease_until REAL);
            """)
        try database.transaction { () throws(OTAError) in
            try database.query(
                "INSERT INTO campaign VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', NULL, ?, ?, ?, ?)",
                [
                    .integer(Int64(schemaVersion)), .text(plan.name), .text(plan.protocolName), .text(plan.image.path),
                    .integer(Int64(plan.image.size)), .text(plan.image.sha256), .integer(Int64(plan.maximumAttempts)),
                    .real(plan.abortFailureRate), .real(plan.successThreshold), plan.selection.map { .text($0.criteria) } ?? .null,
                    plan.selection.map { .integer(Int64($0.discovered)) } ?? .null, plan.minimumBattery.map { .integer(Int64($0)) } ?? .null,
                    plan.window.map { .text($0.description) } ?? .null,
                ])
            var position: Int64 = 0
            for (number, stage) in plan.stages.enumerated() {
                try database.query("INSERT INTO stage VALUES (?, ?)", [.integer(Int64(number)), .text(stage.name)])
                for device in stage.devices {
                    try database.query(
                        "INSERT INTO device (position, address, stage, state, selected_because) VALUES (?, ?, ?, 'pending', ?)",
                        [.integer(position), .text(device), .integer(Int64(number)), plan.selection?.reasons[device].map { .text($0) } ?? .null])
                    position += 1
                }
            }
            try Self.log(
                database, at: leaseClock.now, device: nil, event: "created", attempt: nil,
                detail: "\(plan.devices.count) devices in \(plan.stages.count) stages")
        }
        return SQLiteCampaignStore(database: database, clock: leaseClock)
    }

    /// Opens the campaign file at `path`.
    ///
    /// - Throws: ``OTAError/Code/storage`` when it is missing, not a campaign file, or of
    ///   another layout version.
    public static func open(_ path: String, leaseClock: any CampaignLeaseClock = WallLeaseClock()) throws(OTAError) -> SQLiteCampaignStore {
        guard FileManager.default.fileExists(atPath: path) else {
            throw OTAError(.storage, "\(path): no such campaign file (make one with 'ota campaign create')")
        }
        let database = try SQLiteDatabase(path: path, create: false)
        let rows: [[SQLiteDatabase.Value]]
        do {
            try database.execute("PRAGMA synchronous = FULL")
            rows = try database.query("SELECT schema FROM campaign WHERE id = 1")
        } catch {
            throw OTAError(.storage, "\(path) is not a campaign file (\(error.message.components(separatedBy: ": ").last ?? ""))")
        }
        guard let version = rows.first?.first?.integer else { throw OTAError(.storage, "\(path) is not a campaign file (no campaign row)") }
        if version == 2 {
            try migrateFromLayout2(database)
        } else if version != schemaVersion {
            throw OTAError(.storage, "\(path) was written by another version of ota (layout \(version), this one reads \(schemaVersion))")
        }
        return SQLiteCampaignStore(database: database, clock: leaseClock)
    }

    /// Brings a layout-2 file (before selections, batteries and windows) to layout 3 in one
    /// transaction: the new columns, empty. A file another process migrated meanwhile is left
    /// alone.
    private static func migrateFromLayout2(_ database: SQLiteDatabase) throws(OTAError) {
        do {
            try database.transaction { () throws(OTAError) in
                guard try database.query("SELECT schema FROM campaign WHERE id = 1").first?.first?.integer == 2 else { return }
                for statement in [
                    "ALTER TABLE campaign ADD COLUMN selection TEXT", "ALTER TABLE campaign ADD COLUMN discovered INTEGER",
                    "ALTER TABLE campaign ADD COLUMN minimum_battery INTEGER", "ALTER TABLE campaign ADD COLUMN time_window TEXT",
                    "ALTER TABLE device ADD COLUMN battery INTEGER", "ALTER TABLE device ADD COLUMN selected_because TEXT",
                ] {
                    try database.query(statement)
                }
                try database.query("UPDATE campaign SET schema = ?", [.integer(Int64(schemaVersion))])
            }
        } catch {
            throw OTAError(
                .storage, "\(database.path): cannot bring this layout-2 campaign file to layout \(schemaVersion) (\(error.message)); is it read-only?")
        }
    }

    public func snapshot() throws(OTAError) -> CampaignSnapshot {
        try database.withLock { (database: inout SQLiteDatabase) throws(OTAError) -> CampaignSnapshot in
            let path = database.path
            func corrupt(_ what: String) -> OTAError { OTAError(.storage, "\(path): the campaign file is damaged (\(what))") }
            guard
                let row = try database.query(
                    "SELECT name, protocol, image_path, image_size, image_sha256, maximum_attempts, abort_failure_rate, success_threshold, phase, phase_detail, selection, discovered, minimum_battery, time_window FROM campaign"
                ).first, row.count == 14, let name = row[0].text, let protocolName = row[1].text, let imagePath = row[2].text,
                let imageSize = row[3].integer, let sha = row[4].text, let attempts = row[5].integer, let abortRate = row[6].real,
                let threshold = row[7].real, let phase = row[8].text.flatMap(CampaignPhase.init(rawValue:))
            else { throw corrupt("its campaign row") }
            let stageNames = try database.query("SELECT name FROM stage ORDER BY number").compactMap { $0.first?.text }
            var records: [CampaignDeviceRecord] = []
            for row in try database.query(
                "SELECT address, stage, state, attempts, last_error, lease_owner, battery, selected_because FROM device ORDER BY position")
            {
                guard row.count == 8, let address = row[0].text, let stage = row[1].integer,
                    let state = row[2].text.flatMap(CampaignDeviceState.init(rawValue:)), let tries = row[3].integer
                else { throw corrupt("a device row") }
                records.append(
                    CampaignDeviceRecord(
                        address: address, stage: stage, state: state, attempts: tries, lastError: row[4].text, gateway: row[5].text,
                        battery: row[6].integer, selectedBecause: row[7].text))
            }
            return try CampaignSnapshot(
                restoring: name, protocolName: protocolName, image: CampaignImage(path: imagePath, size: imageSize, sha256: sha),
                maximumAttempts: attempts, abortFailureRate: abortRate, successThreshold: threshold, stageNames: stageNames, devices: records,
                phase: phase, phaseDetail: row[9].text, selection: row[10].text.map { ($0, row[11].integer ?? 0) }, minimumBattery: row[12].integer,
                window: row[13].text, damaged: corrupt)
        }
    }

    public func progress() throws(OTAError) -> CampaignProgress {
        try database.withLock { (database: inout SQLiteDatabase) throws(OTAError) -> CampaignProgress in
            guard let phase = try database.query("SELECT phase FROM campaign").first?.first?.text.flatMap(CampaignPhase.init(rawValue:)) else {
                throw OTAError(.storage, "\(database.path): the campaign file is damaged (its campaign row)")
            }
            let names = try database.query("SELECT name FROM stage ORDER BY number").compactMap { $0.first?.text }
            var stages = names.map { CampaignStageStatus(name: $0, devices: 0, completed: 0, failed: 0) }
            for row in try database.query(
                "SELECT stage, count(*), sum(state = 'completed'), sum(state = 'failed'), sum(state = 'deferred') FROM device GROUP BY stage")
            {
                guard row.count == 5, let stage = row[0].integer, stages.indices.contains(stage) else {
                    throw OTAError(.storage, "\(database.path): the campaign file is damaged (a device row)")
                }
                stages[stage].devices = row[1].integer ?? 0
                stages[stage].completed = row[2].integer ?? 0
                stages[stage].failed = row[3].integer ?? 0
                stages[stage].deferred = row[4].integer ?? 0
            }
            return CampaignProgress(phase: phase, stages: stages)
        }
    }

    public func claim(stage: Int, limit: Int, gateway: String, lease: Duration, includingDeferred: Bool) throws(OTAError) -> [CampaignDeviceRecord] {
        let states = includingDeferred ? "('pending', 'updating', 'deferred')" : "('pending', 'updating')"
        return try change { (database, now) throws(OTAError) -> [CampaignDeviceRecord] in
            guard try database.query("SELECT phase FROM campaign").first?.first?.text == CampaignPhase.running.rawValue else { return [] }
            let maximum = try database.query("SELECT maximum_attempts FROM campaign").first?.first?.integer ?? 1
            let until = now.addingTimeInterval(lease.seconds)
            let rows = try database.query(
                """
                SELECT address, state, attempts, last_error, lease_owner, battery FROM device
                WHERE stage = ? AND state IN \(states) AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires <= ?)
                ORDER BY attempts, position LIMIT ?
                """, [.integer(Int64(stage)), .text(gateway), .real(now.timeIntervalSince1970), .integer(Int64(limit))])
            var claimed: [CampaignDeviceRecord] = []
            for row in rows {
                guard row.count == 6, let address = row[0].text, let state = row[1].text, let attempts = row[2].integer else {
                    throw OTAError(.storage, "\(database.path): the campaign file is damaged (a device row)")
                }
                var lastError = row[3].text
                let previous = row[4].text
                if let previous, previous != gateway {
                    try Self.log(database, at: now, device: address, event: "taken-over", attempt: nil, detail: previous, gateway: gateway)
                }
                if state == CampaignDeviceState.updating.rawValue {
                    // Its gateway stopped during this attempt: it failed.
                    let final = attempts >= maximum
                    lastError = CampaignRunner.stoppedDuringAttempt
                    try Self.update(
                        database, device: address, "state = ?, last_error = ?, lease_owner = NULL, lease_expires = NULL",
                        [.text(final ? "failed" : "pending"), .text(CampaignRunner.stoppedDuringAttempt)])
                    try Self.log(
                        database, at: now, device: address, event: final ? "failed" : "retry", attempt: attempts, detail: CampaignRunner.stoppedDuringAttempt,
                        gateway: gateway)
                    if final { continue }
                }
                try Self.update(
                    database, device: address, "lease_owner = ?, lease_expires = ?", [.text(gateway), .real(until.timeIntervalSince1970)])
                try Self.log(database, at: now, device: address, event: "leased", attempt: nil, detail: nil, gateway: gateway, leaseUntil: until)
                claimed.append(
                    CampaignDeviceRecord(
                        address: address, stage: stage, state: state == CampaignDeviceState.deferred.rawValue ? .deferred : .pending, attempts: attempts,
                        lastError: lastError, gateway: gateway, battery: row[5].integer))
            }
            return claimed
        }
    }

    @discardableResult
    public func renew(gateway: String, lease: Duration) throws(OTAError) -> Int {
        try change { (database, now) throws(OTAError) -> Int in
            let until = now.addingTimeInterval(lease.seconds)
            let held = try database.query(
                "SELECT address FROM device WHERE lease_owner = ? AND lease_expires > ?", [.text(gateway), .real(now.timeIntervalSince1970)]
            ).compactMap { $0.first?.text }
            for address in held {
                try Self.update(database, device: address, "lease_expires = ?", [.real(until.timeIntervalSince1970)])
                try Self.log(database, at: now, device: address, event: "renewed", attempt: nil, detail: nil, gateway: gateway, leaseUntil: until)
            }
            return held.count
        }
    }

    public func attemptStarted(device: String, attempt: Int, gateway: String) throws(OTAError) {
        try change { (database, now) throws(OTAError) in
            try Self.checkLease(database, device: device, gateway: gateway, now: now)
            try Self.update(database, device: device, "state = 'updating', attempts = ?", [.integer(Int64(attempt))])
            try Self.log(database, at: now, device: device, event: "started", attempt: attempt, detail: gateway, gateway: gateway)
        }
    }

    public func attemptFinished(device: String, attempt: Int, gateway: String, outcome: CampaignAttemptOutcome) throws(OTAError) {
        try change { (database, now) throws(OTAError) in
            try Self.checkLease(database, device: device, gateway: gateway, now: now)
            switch outcome {
            case .completed(let detail):
                try Self.update(database, device: device, "state = 'completed', last_error = NULL, lease_owner = NULL, lease_expires = NULL", [])
                try Self.log(database, at: now, device: device, event: "completed", attempt: attempt, detail: detail, gateway: gateway)
            case .failed(let message, let final):
                try Self.update(
                    database, device: device, "state = ?, last_error = ?, lease_owner = NULL, lease_expires = NULL",
                    [.text(final ? "failed" : "pending"), .text(message)])
                try Self.log(database, at: now, device: device, event: final ? "failed" : "retry", attempt: attempt, detail: message, gateway: gateway)
            }
        }
    }

    public func attemptDeferred(device: String, attempt: Int, gateway: String, battery: BatteryBelowMinimum) throws(OTAError) {
        try change { (database, now) throws(OTAError) in
            try Self.checkLease(database, device: device, gateway: gateway, now: now)
            try Self.update(
                database, device: device, "state = 'deferred', attempts = ?, battery = ?, lease_owner = NULL, lease_expires = NULL",
                [.integer(Int64(max(0, attempt - 1))), .integer(Int64(battery.level))])
            try Self.log(database, at: now, device: device, event: "deferred", attempt: attempt, detail: battery.summary, gateway: gateway)
        }
    }

    public func finish(_ phase: CampaignPhase, detail: String, gateway: String) throws(OTAError) {
        try change { (database, now) throws(OTAError) in
            // Another gateway may have finished it first: its verdict stays.
            guard try database.query("SELECT phase FROM campaign").first?.first?.text == CampaignPhase.running.rawValue else { return }
            try database.query("UPDATE campaign SET phase = ?, phase_detail = ?", [.text(phase.rawValue), .text(detail)])
            try Self.log(database, at: now, device: nil, event: "campaign-\(phase.rawValue)", attempt: nil, detail: detail, gateway: gateway)
        }
    }

    public func history() throws(OTAError) -> [CampaignHistoryEntry] {
        try database.withLock { (database: inout SQLiteDatabase) throws(OTAError) -> [CampaignHistoryEntry] in
            try database.query("SELECT at, device, event, attempt, detail, gateway, lease_until FROM history ORDER BY id").map { row in
                CampaignHistoryEntry(
                    at: Date(timeIntervalSince1970: row[0].real ?? 0), device: row[1].text, event: row[2].text ?? "?", attempt: row[3].integer,
                    detail: row[4].text, gateway: row[5].text, leaseUntil: row[6].real.map { Date(timeIntervalSince1970: $0) })
            }
        }
    }

    // MARK: - Writing

    /// Runs `body` in one transaction, with the lease clock's time for everything it records.
    private func change<R: Sendable>(_ body: (SQLiteDatabase, Date) throws(OTAError) -> R) throws(OTAError) -> R {
        let clock = self.clock
        return try database.withLock { (database: inout SQLiteDatabase) throws(OTAError) -> R in
            let handle = database
            return try handle.transaction { () throws(OTAError) -> R in try body(handle, clock.now) }
        }
    }

    /// Refuses a write by a gateway that does not hold the device's lease.
    private static func checkLease(_ database: SQLiteDatabase, device: String, gateway: String, now: Date) throws(OTAError) {
        guard let row = try database.query("SELECT lease_owner, lease_expires FROM device WHERE address = ?", [.text(device)]).first else {
            throw OTAError(.storage, "\(database.path): no device \(device) in this campaign")
        }
        guard row[0].text == gateway, let expires = row[1].real, expires > now.timeIntervalSince1970 else {
            let holder = row[0].text.map { "it is leased to \($0)" } ?? "it is not leased"
            throw OTAError(
                .storage,
                "\(database.path): gateway \(gateway) no longer holds the lease on \(device) (\(holder)); it stops rather than update a device another gateway may have"
            )
        }
    }

    private static func update(_ database: SQLiteDatabase, device: String, _ assignments: String, _ values: [SQLiteDatabase.Value]) throws(OTAError) {
        try database.query("UPDATE device SET \(assignments) WHERE address = ?", values + [.text(device)])
        guard try database.query("SELECT changes()").first?.first?.integer == 1 else {
            throw OTAError(.storage, "\(database.path): no device \(device) in this campaign")
        }
    }

    private static func log(
        _ database: SQLiteDatabase, at: Date, device: String?, event: String, attempt: Int?, detail: String?, gateway: String? = nil,
        leaseUntil: Date? = nil
    ) throws(OTAError) {
        try database.query(
            "INSERT INTO history (at, device, event, attempt, detail, gateway, lease_until) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .real(at.timeIntervalSince1970), device.map { .text($0) } ?? .null, .text(event), attempt.map { .integer(Int64($0)) } ?? .null,
                detail.map { .text($0) } ?? .null, gateway.map { .text($0) } ?? .null, leaseUntil.map { .real($0.timeIntervalSince1970) } ?? .null,
            ])
    }
}
