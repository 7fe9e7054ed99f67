import Foundation

/// What the preflight checks before the first write: a minimum battery level, the hardware the
/// firmware declares, and whether the person running the update forces it anyway.
public struct PreflightPolicy: Sendable, Hashable {
    /// A battery level below which an update is refused.
    public struct BatteryRequirement: Sendable, Hashable {
        /// The minimum, 0–100 %.
        public var percent: Int
        /// Who asks for it, for messages ("catalog family 'acme-sensor'", "--min-battery").
        public var source: String

        /// Creates a requirement.
        public init(percent: Int, source: String) {
            self.percent = percent
            self.source = source
        }
    }

    /// Whether to read the Battery and Device Information services when the device has them.
    /// Default `true`.
    public var readsStandardServices = true
    /// The minimum battery level; `nil` checks none (the default).
    public var minimumBattery: BatteryRequirement?
    /// The hardware the firmware declares, every one checked.
    public var hardware: [HardwareCompatibility] = []
    /// Go on despite a refusal, saying so. Default `false`.
    public var force = false
    /// The version the update installs, compared with the device's firmware revision: an older
    /// one is refused unless it allows downgrades. `nil` compares nothing (the default).
    public var firmwareVersion: VersionRequirement?

    /// The defaults: read, check nothing.
    public init() {}
}

/// Reads a device's Battery and Device Information services after connecting and before the
/// protocol's first write, and refuses an update the device cannot take: battery below the
/// policy's minimum, or hardware the firmware is not built for. Run by ``UpdateEngine`` on the
/// first connection of an update.
public struct Preflight: Sendable {
    /// What to check.
    public var policy: PreflightPolicy
    /// The limit of each read.
    public var responseTimeout: Duration
    /// The clock the limit runs on.
    public let clock: any Clock<Duration>

    /// Creates a preflight.
    public init(policy: PreflightPolicy, responseTimeout: Duration, clock: any Clock<Duration>) {
        self.policy = policy
        self.responseTimeout = responseTimeout
        self.clock = clock
    }

    /// Reads what `transport` exposes of the standard services, each read bounded by the
    /// response timeout. A missing service, an ATT error, a malformed value or a timeout is
    /// recorded in ``DeviceInformation/unread``.
    ///
    /// - Throws: ``OTAError/Code/disconnected`` when the link drops, ``OTAError/Code/cancelled``
    ///   when the task is cancelled: the update cannot go on either way.
    public func read(over transport: any Transport) async throws(OTAError) -> DeviceInformation {
        var information = DeviceInformation()
        let services = Set(transport.characteristics.keys.map(\.service))
        if services.contains(StandardServices.deviceInformation) {
            for (id, name) in StandardServices.deviceInformationStrings {
                guard transport.characteristics[id]?.contains(.read) == true else {
                    information.unread.append("no \(name)")
                    continue
                }
                switch try await read(id, name: name, over: transport) {
                case .success(let value):
                    // What the device says goes on the terminal and into messages: control
                    // characters escaped, at most MessageText.maximumNameLength shown.
                    let text = MessageText.name(
                        String(decoding: value, as: UTF8.self)
                            .trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: "\0")))
                    )
                    guard !text.isEmpty else {
                        information.unread.append("\(name): empty")
                        continue
                    }
                    switch id {
                    case StandardServices.manufacturerName: information.manufacturer = text
                    case StandardServices.modelNumber: information.modelNumber = text
                    case StandardServices.hardwareRevision: information.hardwareRevision = text
                    default: information.firmwareRevision = text
                    }
                case .failure(let reason):
                    information.unread.append("\(name): \(reason)")
                }
            }
        } else {
            information.unread.append("no Device Information service")
        }
        if transport.characteristics[StandardServices.batteryLevel]?.contains(.read) == true {
            switch try await read(StandardServices.batteryLevel, name: "battery level", over: transport) {
            case .success(let value):
                if value.count == 1, let level = value.first, level <= 100 {
                    information.batteryLevel = Int(level)
                } else {
                    information.unread.append("battery level: \(Hex.bytes(value)) is not one byte 0-100")
                }
            case .failure(let reason):
                information.unread.append("battery level: \(reason)")
            }
        } else {
            information.unread.append("no Battery service")
        }
        return information
    }

    /// One read: its value, or why there is none; throws only when the update cannot go on.
    private func read(_ id: CharacteristicID, name: String, over transport: any Transport) async throws(OTAError) -> Result<Data, PreflightReadFailure> {
        let limit = responseTimeout
        do {
            return .success(
                try await withTimeout(limit, clock: clock, timeoutError: OTAError(.timeout, "timed out after \(limit.humanReadable)")) {
                    try await transport.read(id)
                }
            )
        } catch {
            let wrapped = UpdateContext.describe(error, doing: "reading the \(name)")
            switch wrapped.code {
            case .disconnected, .cancelled: throw wrapped
            case .timeout: return .failure(PreflightReadFailure(description: wrapped.message))
            default: return .failure(PreflightReadFailure(description: (error as? TransportError)?.message ?? wrapped.message))
            }
        }
    }

    /// What the checks found: refusals (each one line, ending with the advice to pass --force)
    /// and notes (what could not be checked, or what --force let through).
    public struct Findings: Sendable {
        /// Why the update cannot go on, one error each: ``OTAError/Code/deviceNotReady`` for the
        /// battery, ``OTAError/Code/incompatible`` for the hardware; empty when it can go on.
        public var refusals: [OTAError] = []
        /// Lines for the log.
        public var notes: [String] = []
    }

    /// Checks `information` against the policy; the version the device runs is `reported` when
    /// the protocol asked the device (``RunningVersionReporting``), else its Device Information
    /// firmware revision.
    public func check(_ information: DeviceInformation, reported: ReportedVersion? = nil) -> Findings {
        // Each problem with the advice that ends its refusal.
        var problems: [(code: OTAError.Code, problem: String, advice: String, cause: (any Error & Sendable)?)] = []
        var findings = Findings()
        if let minimum = policy.minimumBattery {
            if let level = information.batteryLevel {
                if level < minimum.percent {
                    problems.append(
                        (
                            .deviceNotReady, "battery at \(level)%, below the \(minimum.percent)% this update needs (\(minimum.source))", "charge the device",
                            BatteryBelowMinimum(level: level, minimum: minimum.percent)
                        ))
                }
            } else {
                findings.notes.append("battery level unknown, so the \(minimum.percent)% minimum (\(minimum.source)) is not checked")
            }
        }
        for declaration in policy.hardware {
            let why: String
            if let revision = information.hardwareRevision {
                switch declaration.verdict(for: revision) {
                case .matches:
                    continue
                case .mismatch:
                    problems.append(
                        (
                            .incompatible,
                            "device hardware revision '\(revision)' does not match the package (\(declaration.declared))",
                            "use firmware built for '\(revision)'", nil
                        ))
                    continue
                case .notComparable:
                    why = "the device's hardware revision '\(revision)' is not an integer"
                }
            } else {
                why = "the device's hardware revision is unknown"
            }
            switch declaration.whenUnknown {
            case .refuse:
                problems.append(
                    (.incompatible, "\(why), so the package's hardware (\(declaration.declared)) cannot be checked", "update a device that reports it", nil))
            case .note(let checker):
                findings.notes.append("\(why), so \(declaration.declared) is not compared here (\(checker))")
            }
        }
        if let requirement = policy.firmwareVersion {
            let revision = reported?.text ?? information.firmwareRevision
            // Where the version came from, when not from Device Information.
            let from = reported.map { " (\($0.source))" } ?? ""
            if let revision, let running = FirmwareVersion(revision) {
                if requirement.version < running {
                    let downgrade = "the device runs firmware \(running)\(from), newer than the \(requirement.version) of \(requirement.source)"
                    if requirement.allowsDowngrade {
                        findings.notes.append("\(downgrade); installing the older version (--allow-downgrade)")
                    } else {
                        findings.refusals.append(OTAError(.incompatible, "\(downgrade); pass --allow-downgrade to install an older version"))
                    }
                } else if requirement.version.isSameVersion(as: running) {
                    findings.notes.append("the device already runs \(running)\(from), the version of \(requirement.source); installing it again")
                } else {
                    findings.notes.append("version: device \(running)\(from) → \(requirement.version) (\(requirement.source))")
                }
            } else {
                let why =
                    revision.map { "the device's firmware revision '\($0)'\(from) is not a version" } ?? "the device's firmware version is unknown"
                findings.notes.append("\(why), so \(requirement.version) (\(requirement.source)) is not checked for a downgrade")
            }
        }
        for (code, problem, advice, cause) in problems {
            if policy.force {
                findings.notes.append("\(problem); updating anyway (--force)")
            } else {
                findings.refusals.append(OTAError(code, "\(problem); \(advice) or pass --force", underlying: cause))
            }
        }
        return findings
    }

    /// Reads, reports and checks: emits the device line, the notes, and throws the first refusal.
    /// `reported` is the version the protocol read from the device, when it can tell.
    func run(over transport: any Transport, recorder: EventRecorder, reported: ReportedVersion? = nil) async throws(OTAError) {
        guard policy.readsStandardServices else { return }
        let information = try await read(over: transport)
        recorder.emit(.device(information, at: recorder.elapsed))
        let findings = check(information, reported: reported)
        for note in findings.notes { recorder.note(note) }
        if let refusal = findings.refusals.first { throw refusal }
    }
}

/// The cause of a battery refusal (the ``OTAError/underlying`` of its
/// ``OTAError/Code/deviceNotReady``): the level read and the minimum, for a caller that treats a
/// low battery as "not now" rather than a failure (a campaign defers the device).
public struct BatteryBelowMinimum: Error, Sendable, Hashable, CustomStringConvertible {
    /// The level the device reported, 0–100 %.
    public var level: Int
    /// The minimum the update needs, 0–100 %.
    public var minimum: Int

    /// Describes a refusal.
    public init(level: Int, minimum: Int) {
        self.level = level
        self.minimum = minimum
    }

    /// "battery at 12%, below the 30%": the words of the refusal's message, so that the error's
    /// description does not repeat them.
    public var description: String { "battery at \(level)%, below the \(minimum)%" }

    /// "battery 12% < 30%": the short form a campaign's history and summary show.
    public var summary: String { "battery \(level)% < \(minimum)%" }

    /// The battery refusal in `error`, if that is what it is.
    public static func cause(of error: OTAError) -> BatteryBelowMinimum? {
        guard error.code == .deviceNotReady else { return nil }
        var cause: (any Error)? = error.underlying
        while let current = cause {
            if let refusal = current as? BatteryBelowMinimum { return refusal }
            cause = (current as? OTAError)?.underlying
        }
        return nil
    }
}

/// Why one preflight read gave no value.
struct PreflightReadFailure: Error, CustomStringConvertible {
    var description: String
}
