import Foundation
import FuzzSupport
import OTACore

/// `ota campaign create --target-list FILE` and `--stage-list FILE…` (decision 0044): a list
/// file's entries (`CampaignTargetSelection.listEntries`), the selection of a fleet by that list,
/// and the stages of the rollout groups (`CampaignPlan.stages(of:groups:)`).
///
/// The input: the target list, then up to four stage lists, separated by NUL bytes. The fleet is
/// eight devices as the simulator names them (`lock-1`…), one of them nameless and two sharing
/// a name.
///
/// Oracles: every entry is a trimmed line, not empty, not a comment, and the entries written one
/// a line read back the same; the list selects exactly the devices it names by address or name,
/// and the entries it calls unheard name none; stages by group hold every device once, each
/// group's stage exactly the devices it names, "the rest" last; a device named by two groups and
/// a group naming none are refused, nothing else is; the entries reported as naming no device
/// name none.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTargetList(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let parts = fuzzInput(start, count).split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    var devices = fleet
    if let entries = attempt({ try CampaignTargetSelection.listEntries(parts[0], source: "fleet.txt") }) {
        checkEntries(entries)
        var selection = CampaignTargetSelection()
        selection.list = entries
        selection.listSource = "fleet.txt"
        let listed = Set(entries)
        let named = fleet.filter { names($0).contains(where: listed.contains) }
        if let selected = attempt({ try selection.select(from: fleet, catalog: DeviceCatalog()) }) {
            guard selected.devices == named else { fatalError("the list \(entries) selected \(selected.devices.map(\.address))") }
            for entry in selected.unheardListEntries where fleet.contains(where: { names($0).contains(entry) }) {
                fatalError("'\(entry)' names a device but was reported unheard")
            }
            devices = selected.devices
        } else if !named.isEmpty {
            fatalError("the list \(entries) names \(named.count) devices and selected none")
        }
    }
    var groups: [CampaignGroup] = []
    for (index, text) in parts.dropFirst().prefix(4).enumerated() {
        guard let entries = attempt({ try CampaignTargetSelection.listEntries(text, source: "g\(index + 1).txt") }) else { return 0 }
        checkEntries(entries)
        groups.append(CampaignGroup(name: "g\(index + 1)", entries: entries))
    }
    guard !groups.isEmpty else { return 0 }
    let members = groups.map { group in devices.filter { names($0).contains(where: Set(group.entries).contains) }.map(\.address) }
    let twice = Set(members.joined()).count < members.joined().count
    guard let result = attempt({ try CampaignPlan.stages(of: devices, groups: groups) }) else {
        guard twice || members.contains(where: \.isEmpty) else { fatalError("groups \(groups.map(\.entries)) were refused") }
        return 0
    }
    guard !twice, !members.contains(where: \.isEmpty) else { fatalError("groups \(groups.map(\.entries)) were accepted") }
    let rest = devices.map(\.address).filter { !members.joined().contains($0) }
    let expected = members + (rest.isEmpty ? [] : [rest])
    guard result.stages.map(\.devices) == expected else { fatalError("groups \(groups.map(\.entries)) made stages \(result.stages.map(\.devices))") }
    for entry in result.unmatched where devices.contains(where: { names($0).contains(entry) }) {
        fatalError("'\(entry)' names a device the campaign took but was reported as naming none")
    }
    return 0
}

/// The simulated fleet's way of naming devices, with a nameless one and a name two share.
let fleet: [DiscoveredDevice] = (1...8).map { index in
    let name: String? = index == 4 ? nil : index == 8 ? "lock-1" : "\(["lock", "sensor", "meter"][(index - 1) % 3])-\(index)"
    return DiscoveredDevice(address: "C0:DE:00:00:00:0\(index)", advertisement: Advertisement(name: name, rssi: -40 - index))
}

/// What an entry may name a device by: its address, its advertised name.
func names(_ device: DiscoveredDevice) -> [String] { [device.address] + (device.advertisement.name.map { [$0] } ?? []) }

/// Every entry a trimmed line, not empty, not a comment; written one a line, they read back.
func checkEntries(_ entries: [String]) {
    for entry in entries {
        guard !entry.isEmpty, !entry.hasPrefix("#"), !entry.contains(where: \.isNewline), entry.trimmingCharacters(in: .whitespaces) == entry else {
            fatalError("the entry '\(entry)' (\(Array(entry.utf8))) is not a trimmed line")
        }
    }
    guard (try? CampaignTargetSelection.listEntries(entries.joined(separator: "\n"), source: "again")) == entries else {
        fatalError("the entries \(entries) written one a line read back otherwise")
    }
}

@main
enum Main {
    static func main() { runFuzzer(fuzzTargetList) }
}
