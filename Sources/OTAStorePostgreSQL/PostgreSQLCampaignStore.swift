import Foundation
import OTACore
import Synchronization

/// A campaign kept in a PostgreSQL database, shared by several gateways (processes, hosts).
///
/// A gateway claims devices with `SELECT … FOR UPDATE SKIP LOCKED`, so two gateways claiming at
/// once get different devices without waiting for each other; a claim leases the devices to it
/// until an expiry on the **server's clock** (`now()`), which every gateway shares whatever its
/// own clock says. Each call is one transaction, committed before it returns; every change of a
/// device, each lease and renewal included, is a row of the `history` table with its gateway.
///
/// One campaign per database: ``create(uri:plan:)`` makes the tables in the database the URI
/// names (an empty one).
///
/// ```swift
/// let store = try PostgreSQLCampaignStore.open(uri: "postgres://ota@db.example/locks")
/// let result = try await CampaignRunner(engine: engine, gateway: "pi-1").run(store, fleet: fleet)
/// ```
public final class PostgreSQLCampaignStore: CampaignStore {
    private let connection: Mutex<PostgreSQLConnection>
    /// The connection URI, its password masked.
    public let label: String

    /// The layout this code writes and reads. 2: the target selection, the minimum battery, the
    /// window, and deferred devices with their battery level. A layout-1 database is brought to
    /// 2 when it is opened (its new columns empty); any other version is refused.
    static let schemaVersion = 2

    private init(connection: sending PostgreSQLConnection) {
        label = connection.label
        self.connection = Mutex(connection)
    }

    /// Whether `location` names a PostgreSQL database (`postgres://…` or `postgresql://…`)
    /// rather than a file.
    public static func isURI(_ location: String) -> Bool {
        location.hasPrefix("postgres://") || location.hasPrefix("postgresql://")
    }

    /// Creates the campaign's tables in the database at `uri`, with `plan`, every device pending.
    ///
    /// - Throws: ``OTAError/Code/storage`` when the server cannot be reached or the database
    ///   holds a campaign already.
    public static func create(uri: String, plan: CampaignPlan) throws(OTAError) -> PostgreSQLCampaignStore {
        let connection = try PostgreSQLConnection(uri: uri)
        try connection.transaction { () throws(OTAError) in
            guard try connection.query("SELECT to_regclass('campaign') IS NOT NULL").first?.first == "f" else {
                throw OTAError(
                    .storage,
                    "\(connection.label) holds a campaign already: run it with 'ota campaign run', or create this one in another (empty) database")
            }
            for statement in [
                """
                CREATE TABLE campaign (
                    id integer PRIMARY KEY CHECK (id = 1), schema integer NOT NULL, name text NOT NULL, protocol text NOT NULL,
                    image_path text NOT NULL, image_size bigint NOT NULL, image_sha256 text NOT NULL, maximum_attempts integer NOT NULL,
                    abort_failure_rate double precision NOT NULL, success_threshold double precision NOT NULL, phase text NOT NULL,
                    phase_detail text, selection text, discovered integer, minimum_battery integer, time_window text)
                """,
                "CREATE TABLE stage (number integer PRIMARY KEY, name text NOT NULL)",
                """
                CREATE TABLE device (
                    position integer PRIMARY KEY, address text NOT NULL UNIQUE, stage integer NOT NULL REFERENCES stage (number),
                    state text NOT NULL, attempts integer NOT NULL DEFAULT 0, last_error text, lease_owner text, lease_expires timestamptz,
                    battery integer, selected_because text)
                """,
                "CREATE INDEX device_claim ON device (stage, state, attempts, position)",
                """
                CREATE TABLE history (
                    id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), device text, event text NOT NULL, attempt integer,
                    detail text, gateway text, lease_until timestamptz)
                """,
            ] {
                try connection.query(statement)
            }
            try connection.query(
                "INSERT INTO campaign VALUES (1, $1, $2, $3, $4, $5, $6, $7, $8, $9, 'running', NULL, $10, $11, $12, $13)",
                [
                    "\(schemaVersion)", plan.name, plan.protocolName, plan.image.path, "\(plan.image.size)", plan.image.sha256, "\(plan.maximumAttempts)",
                    "\(plan.abortFailureRate)", "\(plan.successThreshold)", plan.selection?.criteria, plan.selection.map { "\($0.discovered)" },
                    plan.minimumBattery.map { "\($0)" }, plan.window?.description,
                ])
            var positions: [String] = []
            var addresses: [String] = []
            var stages: [String] = []
            var reasons: [String?] = []
            for (number, stage) in plan.stages.enumerated() {
                try connection.query("INSERT INTO stage VALUES ($1, $2)", ["\(number)", stage.name])
                for device in stage.devices {
                    positions.append("\(positions.count)")
                    addresses.append(device)
                    stages.append("\(number)")
                    reasons.append(plan.selection?.reasons[device])
                }
            }
            try connection.query(
                """
                INSERT INTO device (position, address, stage, state, selected_because)
                SELECT p, a, s, 'pending', r FROM unnest($1::integer[], $2::text[], $3::integer[], $4::text[]) AS t (p, a, s, r)
                """,
                [array(positions), array(addresses), array(stages), nullableArray(reasons)])
            try connection.query(
                "INSERT INTO history (event, detail) VALUES ('created', $1)", ["\(plan.devices.count) devices in \(plan.stages.count) stages"])
        }
        return PostgreSQLCampaignStore(connection: connection)
    }

    /// Opens the campaign in the database at `uri`.
    ///
    /// - Throws: ``OTAError/Code/storage`` when the server cannot be reached, the database holds
    ///   no campaign, or one of another layout version.
    public static func open(uri: String) throws(OTAError) -> PostgreSQLCampaignStore {
        let connection = try PostgreSQLConnection(uri: uri)
        let rows: [[String?]]
        do {
            rows = try connection.run("SELECT schema FROM campaign WHERE id = 1").rows
        } catch {
            guard error.state == "42P01" || error.state == "42703" else {
                throw OTAError(.storage, "\(connection.label): the campaign database failed: \(error.message)")
            }
            throw OTAError(.storage, "\(connection.label) holds no campaign (make one with 'ota campaign create')")
        }
        guard let version = rows.first?.first.flatMap({ $0.flatMap { Int($0) } }) else {
            throw OTAError(.storage, "\(connection.label) holds no campaign (its campaign table is empty)")
        }
        if version == 1 {
            try migrateFromLayout1(connection)
        } else if version != schemaVersion {
            throw OTAError(.storage, "\(connection.label) was written by another version of ota (layout \(version), this one reads \(schemaVersion))")
        }
        return PostgreSQLCampaignStore(connection: connection)
    }

    /// Brings a layout-1 database (before selections, batteries and windows) to layout 2 in one
    /// transaction, the campaign row locked so that gateways opening it at once migrate it once.
    private static func migrateFromLayout1(_ connection: PostgreSQLConnection) throws(OTAError) {
        try connection.transaction { () throws(OTAError) in
            guard try connection.query("SELECT schema FROM campaign WHERE id = 1 FOR UPDATE").first?.first == "1" else { return }
            for statement in [
                "ALTER TABLE campaign ADD COLUMN IF NOT EXISTS selection text, ADD COLUMN IF NOT EXISTS discovered integer, ADD COLUMN IF NOT EXISTS minimum_battery integer, ADD COLUMN IF NOT EXISTS time_window text",
                "ALTER TABLE device ADD COLUMN IF NOT EXISTS battery integer, ADD COLUMN IF NOT EXISTS selected_because text",
                "UPDATE campaign SET schema = \(schemaVersion)",
            ] {
                try connection.query(statement)
            }
        }
    }

    public func snapshot() throws(OTAError) -> CampaignSnapshot {
        try change { (connection) throws(OTAError) -> CampaignSnapshot in
            let label = connection.label
            func corrupt(_ what: String) -> OTAError { OTAError(.storage, "\(label): the campaign database is damaged (\(what))") }
            guard
                let row = try connection.query(
                    "SELECT name, protocol, image_path, image_size, image_sha256, maximum_attempts, abort_failure_rate, success_threshold, phase, phase_detail, selection, discovered, minimum_battery, time_window FROM campaign"
                ).first, row.count == 14, let name = row[0], let protocolName = row[1], let imagePath = row[2],
                let imageSize = row[3].flatMap({ Int($0) }), let sha = row[4], let attempts = row[5].flatMap({ Int($0) }),
                let abortRate = row[6].flatMap({ Double($0) }), let threshold = row[7].flatMap({ Double($0) }),
                let phase = row[8].flatMap(CampaignPhase.init(rawValue:))
            else { throw corrupt("its campaign row") }
            let stageNames = try connection.query("SELECT name FROM stage ORDER BY number").compactMap { $0.first ?? nil }
            var records: [CampaignDeviceRecord] = []
            for row in try connection.query(
                "SELECT address, stage, state, attempts, last_error, lease_owner, battery, selected_because FROM device ORDER BY position")
            {
                guard row.count == 8, let address = row[0], let stage = row[1].flatMap({ Int($0) }),
                    let state = row[2].flatMap(CampaignDeviceState.init(rawValue:)), let tries = row[3].flatMap({ Int($0) })
                else { throw corrupt("a device row") }
                records.append(
                    CampaignDeviceRecord(
                        address: address, stage: stage, state: state, attempts: tries, lastError: row[4], gateway: row[5],
                        battery: row[6].flatMap { Int($0) }, selectedBecause: row[7]))
            }
            return try CampaignSnapshot(
                restoring: name, protocolName: protocolName, image: CampaignImage(path: imagePath, size: imageSize, sha256: sha),
                maximumAttempts: attempts, abortFailureRate: abortRate, successThreshold: threshold, stageNames: stageNames, devices: records,
                phase: phase, phaseDetail: row[9], selection: row[10].map { ($0, row[11].flatMap { Int($0) } ?? 0) },
                minimumBattery: row[12].flatMap { Int($0) }, window: row[13], damaged: corrupt)
        }
    }

    public func progress() throws(OTAError) -> CampaignProgress {
        try change { (connection) throws(OTAError) -> CampaignProgress in
            guard let phase = try connection.query("SELECT phase FROM campaign").first?.first?.flatMap(CampaignPhase.init(rawValue:)) else {
                throw OTAError(.storage, "\(connection.label): the campaign database is damaged (its campaign row)")
            }
            let names = try connection.query("SELECT name FROM stage ORDER BY number").compactMap { $0.first ?? nil }
            var stages = names.map { CampaignStageStatus(name: $0, devices: 0, completed: 0, failed: 0) }
            for row in try connection.query(
                """
                SELECT stage, count(*), count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE state = 'failed'),
                    count(*) FILTER (WHERE state = 'deferred')
                FROM device GROUP BY stage
                """)
            {
                guard row.count == 5, let stage = row[0].flatMap({ Int($0) }), stages.indices.contains(stage) else {
                    throw OTAError(.storage, "\(connection.label): the campaign database is damaged (a device row)")
                }
                stages[stage].devices = row[1].flatMap { Int($0) } ?? 0
                stages[stage].completed = row[2].flatMap { Int($0) } ?? 0
                stages[stage].failed = row[3].flatMap { Int($0) } ?? 0
                stages[stage].deferred = row[4].flatMap { Int($0) } ?? 0
            }
            return CampaignProgress(phase: phase, stages: stages)
        }
    }

    public func claim(stage: Int, limit: Int, gateway: String, lease: Duration, includingDeferred: Bool) throws(OTAError) -> [CampaignDeviceRecord] {
        let states = includingDeferred ? "('pending', 'updating', 'deferred')" : "('pending', 'updating')"
        return try change { (connection) throws(OTAError) -> [CampaignDeviceRecord] in
            guard let campaign = try connection.query("SELECT phase, maximum_attempts FROM campaign").first, campaign.count == 2,
                campaign[0] == CampaignPhase.running.rawValue
            else { return [] }
            let maximum = campaign[1].flatMap { Int($0) } ?? 1
            // Devices another gateway is claiming or recording on right now are locked: skipped, not waited for.
            let rows = try connection.query(
                """
                SELECT address, state, attempts, last_error, lease_owner, battery FROM device
                WHERE stage = $1 AND state IN \(states) AND (lease_owner IS NULL OR lease_owner = $2 OR lease_expires <= now())
                ORDER BY attempts, position LIMIT $3 FOR UPDATE SKIP LOCKED
                """, ["\(stage)", gateway, "\(limit)"])
            var claimed: [CampaignDeviceRecord] = []
            for row in rows {
                guard row.count == 6, let address = row[0], let state = row[1], let attempts = row[2].flatMap({ Int($0) }) else {
                    throw OTAError(.storage, "\(connection.label): the campaign database is damaged (a device row)")
                }
                var lastError = row[3]
                if let previous = row[4], previous != gateway {
                    try log(connection, device: address, event: "taken-over", detail: previous, gateway: gateway)
                }
                if state == CampaignDeviceState.updating.rawValue {
                    // Its gateway stopped during this attempt: it failed.
                    let final = attempts >= maximum
                    lastError = CampaignRunner.stoppedDuringAttempt
                    try connection.query(
                        "UPDATE device SET state = $2, last_error = $3, lease_owner = NULL, lease_expires = NULL WHERE address = $1",
                        [address, final ? "failed" : "pending", CampaignRunner.stoppedDuringAttempt])
                    try log(
                        connection, device: address, event: final ? "failed" : "retry", attempt: attempts, detail: CampaignRunner.stoppedDuringAttempt,
                        gateway: gateway)
                    if final { continue }
                }
                claimed.append(
                    CampaignDeviceRecord(
                        address: address, stage: stage, state: state == CampaignDeviceState.deferred.rawValue ? .deferred : .pending, attempts: attempts,
                        lastError: lastError, gateway: gateway, battery: row[5].flatMap { Int($0) }))
            }
            guard !claimed.isEmpty else { return [] }
            try connection.query(
                """
                WITH leased AS (
                    UPDATE device SET lease_owner = $2, lease_expires = now() + make_interval(secs => $3)
                    WHERE address = ANY ($1::text[]) RETURNING address, lease_expires)
                INSERT INTO history (device, event, gateway, lease_until) SELECT address, 'leased', $2, lease_expires FROM leased
                """, [array(claimed.map(\.address)), gateway, "\(lease.seconds)"])
            return claimed
        }
    }

    @discardableResult
    public func renew(gateway: String, lease: Duration) throws(OTAError) -> Int {
        try connection.withLock { (connection: inout PostgreSQLConnection) throws(OTAError) -> Int in
            do throws(PostgreSQLConnection.Failure) {
                // One statement: its own transaction.
                return try connection.run(
                    """
                    WITH renewed AS (
                        UPDATE device SET lease_expires = now() + make_interval(secs => $2)
                        WHERE lease_owner = $1 AND lease_expires > now() RETURNING address, lease_expires)
                    INSERT INTO history (device, event, gateway, lease_until) SELECT address, 'renewed', $1, lease_expires FROM renewed
                    """, [gateway, "\(lease.seconds)"]
                ).affected
            } catch {
                throw OTAError(.storage, "\(connection.label): the campaign database failed: \(error.message)")
            }
        }
    }

    public func attemptStarted(device: String, attempt: Int, gateway: String) throws(OTAError) {
        try change { (connection) throws(OTAError) in
            try leased(connection, device: device, gateway: gateway, "state = 'updating', attempts = $3", ["\(attempt)"])
            try log(connection, device: device, event: "started", attempt: attempt, detail: gateway, gateway: gateway)
        }
    }

    public func attemptFinished(device: String, attempt: Int, gateway: String, outcome: CampaignAttemptOutcome) throws(OTAError) {
        try change { (connection) throws(OTAError) in
            switch outcome {
            case .completed(let detail):
                try leased(connection, device: device, gateway: gateway, "state = 'completed', last_error = NULL, lease_owner = NULL, lease_expires = NULL", [])
                try log(connection, device: device, event: "completed", attempt: attempt, detail: detail, gateway: gateway)
            case .failed(let message, let final):
                try leased(
                    connection, device: device, gateway: gateway, "state = $3, last_error = $4, lease_owner = NULL, lease_expires = NULL",
                    [final ? "failed" : "pending", message])
                try log(connection, device: device, event: final ? "failed" : "retry", attempt: attempt, detail: message, gateway: gateway)
            }
        }
    }

    public func attemptDeferred(device: String, attempt: Int, gateway: String, battery: BatteryBelowMinimum) throws(OTAError) {
        try change { (connection) throws(OTAError) in
            try leased(
                connection, device: device, gateway: gateway,
                "state = 'deferred', attempts = $3, battery = $4, lease_owner = NULL, lease_expires = NULL", ["\(max(0, attempt - 1))", "\(battery.level)"])
            try log(connection, device: device, event: "deferred", attempt: attempt, detail: battery.summary, gateway: gateway)
        }
    }

    public func finish(_ phase: CampaignPhase, detail: String, gateway: String) throws(OTAError) {
        try change { (connection) throws(OTAError) in
            // Another gateway may have finished it first: its verdict stays.
            guard
                try !connection.query("UPDATE campaign SET phase = $1, phase_detail = $2 WHERE phase = 'running' RETURNING id", [phase.rawValue, detail])
                    .isEmpty
            else { return }
            try log(connection, device: nil, event: "campaign-\(phase.rawValue)", detail: detail, gateway: gateway)
        }
    }

    public func history() throws(OTAError) -> [CampaignHistoryEntry] {
        try connection.withLock { (connection: inout PostgreSQLConnection) throws(OTAError) -> [CampaignHistoryEntry] in
            try connection.query(
                "SELECT extract(epoch FROM at), device, event, attempt, detail, gateway, extract(epoch FROM lease_until) FROM history ORDER BY id"
            ).map { row in
                CampaignHistoryEntry(
                    at: Date(timeIntervalSince1970: row[0].flatMap { Double($0) } ?? 0), device: row[1], event: row[2] ?? "?",
                    attempt: row[3].flatMap { Int($0) }, detail: row[4], gateway: row[5],
                    leaseUntil: row[6].flatMap { Double($0) }.map { Date(timeIntervalSince1970: $0) })
            }
        }
    }

    // MARK: - Writing

    private func change<R: Sendable>(_ body: (PostgreSQLConnection) throws(OTAError) -> R) throws(OTAError) -> R {
        try connection.withLock { (connection: inout PostgreSQLConnection) throws(OTAError) -> R in
            let handle = connection
            return try handle.transaction { () throws(OTAError) -> R in try body(handle) }
        }
    }

    /// Changes `device` (`assignments` may use `$3`… for `values`) if `gateway` holds its lease;
    /// otherwise refuses, naming who holds it.
    private func leased(
        _ connection: PostgreSQLConnection, device: String, gateway: String, _ assignments: String, _ values: [String?]
    ) throws(OTAError) {
        let changed = try connection.query(
            "UPDATE device SET \(assignments) WHERE address = $1 AND lease_owner = $2 AND lease_expires > now() RETURNING position",
            [device, gateway] + values)
        guard changed.isEmpty else { return }
        guard let row = try connection.query("SELECT lease_owner FROM device WHERE address = $1", [device]).first else {
            throw OTAError(.storage, "\(connection.label): no device \(device) in this campaign")
        }
        let holder = row.first.flatMap { $0 }.map { "it is leased to \($0)" } ?? "it is not leased"
        throw OTAError(
            .storage,
            "\(connection.label): gateway \(gateway) no longer holds the lease on \(device) (\(holder)); it stops rather than update a device another gateway may have"
        )
    }

    private func log(
        _ connection: PostgreSQLConnection, device: String?, event: String, attempt: Int? = nil, detail: String?, gateway: String?
    ) throws(OTAError) {
        try connection.query(
            "INSERT INTO history (device, event, attempt, detail, gateway) VALUES ($1, $2, $3, $4, $5)",
            [device, event, attempt.map { "\($0)" }, detail, gateway])
    }
}

/// A PostgreSQL array literal of `items`, each quoted, `nil` as NULL.
private func nullableArray(_ items: [String?]) -> String {
    "{" + items.map { item in item.map { array([$0]).dropFirst().dropLast() }.map(String.init) ?? "NULL" }.joined(separator: ",") + "}"
}

/// A PostgreSQL array literal of `items`, each quoted.
private func array(_ items: [String]) -> String {
    "{" + items.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }.joined(separator: ",") + "}"
}
