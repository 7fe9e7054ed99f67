/// What a campaign updates, in which order, and when it stops: the part of a campaign that is
/// fixed when it is created.
///
/// Devices are updated stage by stage (a staged rollout): a stage starts only when the one
/// before it has updated at least ``successThreshold`` of its devices, and the campaign stops
/// (aborted) when a stage's failures exceed ``abortFailureRate``.
public struct CampaignPlan: Sendable, Hashable {
    /// A name for people ("door-locks 2.4.1").
    public var name: String
    /// The protocol that installs the image (a registered protocol's name).
    public var protocolName: String
    /// The firmware every device receives.
    public var image: CampaignImage
    /// The stages, in order; every device is in exactly one.
    public var stages: [CampaignStage]
    /// Most attempts per device over the whole campaign, across restarts of the process.
    public var maximumAttempts: Int
    /// The share of a stage's devices (0…1) that may fail for good before the campaign stops.
    public var abortFailureRate: Double
    /// The share of a stage's devices (0…1) that must be updated before the next stage starts.
    /// A device skipped for its battery counts as not updated here and not as failed for
    /// ``abortFailureRate``; a stage short of this only because of such devices holds the
    /// campaign (it stays running) instead of aborting it (decision 0044).
    public var successThreshold: Double
    /// How the devices were chosen from those discovery found; `nil` for a fleet named outright
    /// (`--sim-fleet N` with no criteria) or a plan made before selections were recorded.
    public var selection: CampaignSelectionRecord?
    /// The battery level, 0–100 %, below which an attempt is deferred rather than started
    /// (read by the preflight before any byte is written); `nil` checks none.
    public var minimumBattery: Int?
    /// The hours attempts may start in; `nil`: any time.
    public var window: CampaignWindow?

    /// Creates a plan, checking it.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for no devices, a device in two stages, an
    ///   empty stage, attempts below 1, a rate outside 0…1 or a battery level outside 0…100,
    ///   with a one-line message.
    public init(
        name: String, protocolName: String, image: CampaignImage, stages: [CampaignStage], maximumAttempts: Int = 3,
        abortFailureRate: Double = 0.2, successThreshold: Double = 0.9, selection: CampaignSelectionRecord? = nil, minimumBattery: Int? = nil,
        window: CampaignWindow? = nil
    ) throws(OTAError) {
        guard !stages.isEmpty, stages.allSatisfy({ !$0.devices.isEmpty }) else {
            throw OTAError(.invalidParameter, "a campaign needs at least one device in every stage")
        }
        var seen = Set<String>()
        for device in stages.flatMap(\.devices) where !seen.insert(device).inserted {
            throw OTAError(.invalidParameter, "device \(device) is named twice in the campaign")
        }
        guard maximumAttempts >= 1 else { throw OTAError(.invalidParameter, "a device needs at least 1 attempt, not \(maximumAttempts)") }
        guard (0...1).contains(abortFailureRate), (0...1).contains(successThreshold) else {
            throw OTAError(.invalidParameter, "the abort and success rates are shares between 0 and 1 (0% and 100%)")
        }
        if let minimumBattery, !(0...100).contains(minimumBattery) {
            throw OTAError(.invalidParameter, "the minimum battery is a level between 0% and 100%, not \(minimumBattery)%")
        }
        self.selection = selection
        self.minimumBattery = minimumBattery
        self.window = window
        self.name = name
        self.protocolName = protocolName
        self.image = image
        self.stages = stages
        self.maximumAttempts = maximumAttempts
        self.abortFailureRate = abortFailureRate
        self.successThreshold = successThreshold
    }

    /// Every device of the campaign, stage by stage.
    public var devices: [String] { stages.flatMap(\.devices) }

    /// Splits `devices`, in order, into stages that end at the cumulative `percentages` of the
    /// list (`[10, 50, 100]`: the first 10 %, up to half, the rest); the last always takes the
    /// rest. A stage that would be empty (a small fleet) is left out.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for percentages that are not rising within
    ///   0…100.
    public static func stages(of devices: [String], endingAt percentages: [Double]) throws(OTAError) -> [CampaignStage] {
        guard !percentages.isEmpty, percentages.allSatisfy({ $0 > 0 && $0 <= 100 }), zip(percentages, percentages.dropFirst()).allSatisfy({ $0 < $1 })
        else {
            throw OTAError(.invalidParameter, "stages are rising percentages of the devices, up to 100 (10%,50%,100%)")
        }
        var stages: [CampaignStage] = []
        var start = 0
        for (index, percent) in percentages.enumerated() {
            let end = index == percentages.count - 1 ? devices.count : Int((Double(devices.count) * percent / 100).rounded(.down))
            guard end > start else { continue }
            stages.append(CampaignStage(name: "\(stages.count + 1) (up to \(percentText(percent)))", devices: Array(devices[start..<end])))
            start = end
        }
        return stages
    }
}

extension CampaignPlan {
    /// "10%", "12.5%": a percentage with one decimal, none when it is whole.
    static func percentText(_ percent: Double) -> String {
        (percent == percent.rounded() ? "\(Int(percent))" : String(oneDecimal: percent)) + "%"
    }
}

/// The firmware a campaign installs, as it was when the campaign was made: a later run refuses a
/// file that changed.
public struct CampaignImage: Sendable, Hashable {
    /// Where it was read from.
    public var path: String
    /// Its size in bytes.
    public var size: Int
    /// Its SHA-256, lowercase hex.
    public var sha256: String

    /// Describes an image.
    public init(path: String, size: Int, sha256: String) {
        self.path = path
        self.size = size
        self.sha256 = sha256
    }

    /// Describes `image`, read from `path`: its size and SHA-256.
    public init(path: String, describing image: FirmwareImage) {
        self.init(path: path, size: image.count, sha256: Hex.bytes(image.sha256))
    }

    /// Whether `image` is the one described: the same size and SHA-256.
    public func describes(_ image: FirmwareImage) -> Bool {
        image.count == size && Hex.bytes(image.sha256) == sha256
    }
}

/// One group of a staged rollout.
public struct CampaignStage: Sendable, Hashable {
    /// Its name for people ("1 (10%)", "canary").
    public var name: String
    /// Its devices' addresses.
    public var devices: [String]

    /// Describes a stage.
    public init(name: String, devices: [String]) {
        self.name = name
        self.devices = devices
    }
}

/// A rollout group: the devices a list names (by address or advertised name), made one stage of
/// a campaign ("canary", "site-b").
public struct CampaignGroup: Sendable, Hashable {
    /// Its name for people, shown as the stage's.
    public var name: String
    /// Its entries: addresses or advertised names, one device each.
    public var entries: [String]

    /// Describes a group.
    public init(name: String, entries: [String]) {
        self.name = name
        self.entries = entries
    }
}

extension CampaignPlan {
    /// Splits `devices` (the campaign's, in the order they were selected) into one stage per
    /// group, in the order of `groups`, each taking the devices its entries name by address or
    /// advertised name; the devices no group names make a last stage, "the rest".
    ///
    /// - Returns: the stages, and the entries that named none of `devices` (for a note: a
    ///   device not heard, or not taken by the campaign's targets).
    /// - Throws: ``OTAError/Code/invalidParameter`` for no group, a device two groups name, or a
    ///   group that names none of `devices` (a staged rollout whose canary is missing is a
    ///   mistake, not an empty stage to skip).
    public static func stages(
        of devices: [DiscoveredDevice], groups: [CampaignGroup]
    ) throws(OTAError) -> (
        stages: [CampaignStage], unmatched: [String]
    ) {
        guard !groups.isEmpty else { throw OTAError(.invalidParameter, "a staged rollout by groups needs at least one group") }
        var groupOf: [String: Int] = [:]
        var stages: [CampaignStage] = []
        var unmatched: [String] = []
        for (index, group) in groups.enumerated() {
            let entries = Set(group.entries)
            var members: [String] = []
            var named = Set<String>()
            for device in devices {
                let byName = device.advertisement.name.flatMap { entries.contains($0) ? $0 : nil }
                guard entries.contains(device.address) || byName != nil else { continue }
                if let other = groupOf[device.address] {
                    throw OTAError(
                        .invalidParameter,
                        "\(device.address) is in group '\(MessageText.name(groups[other].name))' and in group '\(MessageText.name(group.name))': a device is in one stage"
                    )
                }
                groupOf[device.address] = index
                members.append(device.address)
                // Both, when the group names the device by address and by name: neither entry
                // is one that named no device.
                if entries.contains(device.address) { named.insert(device.address) }
                if let byName { named.insert(byName) }
            }
            guard !members.isEmpty else {
                throw OTAError(
                    .invalidParameter,
                    "group '\(MessageText.name(group.name))' names none of the \(devices.count) device\(devices.count == 1 ? "" : "s") the campaign's targets took"
                )
            }
            unmatched += group.entries.filter { !named.contains($0) }
            stages.append(CampaignStage(name: "\(index + 1) (\(group.name))", devices: members))
        }
        let rest = devices.map(\.address).filter { groupOf[$0] == nil }
        if !rest.isEmpty { stages.append(CampaignStage(name: "\(stages.count + 1) (the rest)", devices: rest)) }
        return (stages, unmatched)
    }
}
