import Foundation
import Testing

@testable import OTACore

/// Choosing a campaign's devices from what discovery heard: each criterion, their combinations,
/// and the refusals.
@Suite struct CampaignTargetSelectionTests {
    static let lockService = GATTUUID("4f544100-0000-1000-8000-00805f9b34fb")!
    static let meterService = GATTUUID("4f544200-0000-1000-8000-00805f9b34fb")!

    /// Two families, told apart by the service they advertise.
    static let catalog = DeviceCatalog(families: [
        DeviceFamily(name: "door-lock", match: .init(services: [lockService]), protocolName: "generic", source: "test"),
        DeviceFamily(name: "meter", match: .init(services: [meterService]), protocolName: "generic", source: "test"),
    ])

    static func heard(_ address: String, _ name: String?, _ service: GATTUUID, rssi: Int?) -> DiscoveredDevice {
        DiscoveredDevice(address: address, advertisement: Advertisement(name: name, serviceUUIDs: [service], rssi: rssi))
    }

    static let fleet = [
        heard("AA:00:01", "lock-0001", lockService, rssi: -50),
        heard("AA:00:02", "lock-0002", lockService, rssi: -90),
        heard("BB:00:03", "meter-0003", meterService, rssi: -60),
        heard("BB:00:04", "meter-0004", meterService, rssi: nil),
        heard("AA:00:05", "lock-0005-eu", lockService, rssi: -70),
    ]

    func select(_ configure: (inout CampaignTargetSelection) throws -> Void) throws -> CampaignSelection {
        var selection = CampaignTargetSelection()
        try configure(&selection)
        return try selection.select(from: Self.fleet, catalog: Self.catalog)
    }

    @Test("no criterion takes every device discovered, in order, and says so")
    func everything() throws {
        let result = try select { _ in }
        #expect(result.devices.map(\.address) == Self.fleet.map(\.address))
        #expect(result.record.criteria == "every device discovered")
        #expect(result.record.discovered == 5)
    }

    @Test("each criterion alone")
    func eachCriterion() throws {
        #expect(try select { $0.families = ["meter"] }.devices.map(\.address) == ["BB:00:03", "BB:00:04"])
        #expect(try select { $0.namePatterns = [GlobPattern("lock-000?")] }.devices.map(\.address) == ["AA:00:01", "AA:00:02"])
        #expect(try select { $0.addressPatterns = [GlobPattern("BB:*")] }.devices.map(\.address) == ["BB:00:03", "BB:00:04"])
        #expect(try select { $0.list = ["AA:00:02", "meter-0004"] }.devices.map(\.address) == ["AA:00:02", "BB:00:04"])
        // A device heard without an RSSI does not pass a minimum.
        #expect(try select { $0.minimumRSSI = -70 }.devices.map(\.address) == ["AA:00:01", "BB:00:03", "AA:00:05"])
    }

    @Test("entries of one kind are alternatives; kinds combine; the record says why each matched")
    func combinations() throws {
        let either = try select { $0.namePatterns = [GlobPattern("*-eu"), GlobPattern("meter-*")] }
        #expect(either.devices.map(\.address) == ["BB:00:03", "BB:00:04", "AA:00:05"])
        let both = try select {
            $0.families = ["door-lock"]
            $0.minimumRSSI = -75
            $0.addressPatterns = [GlobPattern("AA:*")]
        }
        #expect(both.devices.map(\.address) == ["AA:00:01", "AA:00:05"])
        #expect(both.record.criteria == "family door-lock; address 'AA:*'; RSSI ≥ -75 dBm")
        #expect(both.record.reasons["AA:00:05"] == "family door-lock, address matches 'AA:*', -70 dBm")
        #expect(both.record.reasons["AA:00:02"] == nil)
        let listed = try select {
            $0.list = ["lock-0001", "AA:00:05", "CC:99:99"]
            $0.listSource = "fleet.txt"
            $0.minimumRSSI = -60
        }
        #expect(listed.devices.map(\.address) == ["AA:00:01"])
        #expect(listed.record.reasons["AA:00:01"] == "listed by name, -50 dBm")
        #expect(listed.unheardListEntries == ["CC:99:99"], "a listed device discovery did not hear is named")
    }

    @Test("no match is one line saying what each criterion kept")
    func noMatch() throws {
        let error = #expect(throws: OTAError.self) {
            try select {
                $0.families = ["door-lock"]
                $0.minimumRSSI = -40
            }
        }
        #expect(error?.code == .selectionFailed)
        #expect(
            error?.message
                == "no device matches the campaign's targets (family door-lock; RSSI ≥ -40 dBm): 5 discovered, 3 of family door-lock, 0 at -40 dBm or stronger"
        )
        let nothingHeard = #expect(throws: OTAError.self) { try CampaignTargetSelection().select(from: [], catalog: Self.catalog) }
        #expect(nothingHeard?.message.hasSuffix(": 0 discovered") == true)
    }

    @Test("an unknown family, a bad pattern and an empty list are refused with one line")
    func refusals() throws {
        let family = #expect(throws: OTAError.self) { try select { $0.families = ["door-lok"] } }
        #expect(family?.code == .invalidParameter)
        #expect(family?.message == "no family 'door-lok' in the device catalog (it has door-lock, meter)")
        for bad in ["lock-[0-9]", "lock-{a,b}", ""] {
            let error = #expect(throws: OTAError.self) { try CampaignTargetSelection.pattern(bad, option: "--target-name") }
            #expect(error?.code == .invalidParameter)
            #expect(error?.message.hasPrefix("--target-name") == true, "\(error?.message ?? "")")
        }
        #expect(try CampaignTargetSelection.pattern("lock-*?", option: "--target-name") == GlobPattern("lock-*?"))
        #expect(try CampaignTargetSelection.listEntries("# site A\n  AA:00:01 \n\nlock-0002\r\n", source: "l") == ["AA:00:01", "lock-0002"])
        let empty = #expect(throws: OTAError.self) { try CampaignTargetSelection.listEntries("# nothing\n\n", source: "empty.txt") }
        #expect(empty?.message == "empty.txt lists no device (one address or name a line)")
    }

    @Test("a * in a pattern is a wildcard even where the name holds a * (found by fuzzing: '*' did not match '*-?')")
    func starAgainstAStar() {
        #expect(GlobPattern("*").matches("*-?"))
        #expect(GlobPattern("lock*").matches("lock*x"))
        #expect(GlobPattern("*x").matches("**x"))
        #expect(GlobPattern("a*b").matches("a*b*b"))
        #expect(!GlobPattern("a*b").matches("a*c"))
        #expect(GlobPattern("?*").matches("*"))
        #expect(!GlobPattern("?*?").matches("*"))
    }

    @Test("a family asked for, with a device two families match, is an error naming both")
    func ambiguousFamily() throws {
        var catalog = Self.catalog
        catalog = try catalog.merging(
            DeviceCatalog(families: [DeviceFamily(name: "eu-lock", match: .init(namePattern: GlobPattern("*-eu")), protocolName: "generic", source: "eu")]))
        var selection = CampaignTargetSelection()
        selection.families = ["door-lock"]
        let error = #expect(throws: OTAError.self) { try selection.select(from: Self.fleet, catalog: catalog) }
        #expect(error?.code == .selectionFailed)
        #expect(error?.message.contains("'door-lock' (test) and 'eu-lock' (eu)") == true, "\(error?.message ?? "")")
    }
}

/// A campaign's time window: the forms it reads, midnight, offsets, and when it opens and closes.
@Suite struct CampaignWindowTests {
    /// 2027-01-15 at `hour`:`minute` UTC.
    static func at(_ hour: Int, _ minute: Int = 0) -> Date {
        Date(timeIntervalSince1970: 1_800_000_000 - 8 * 3600 + Double(hour * 3600 + minute * 60))
    }

    @Test("the forms it reads, and the ones it refuses")
    func parsing() throws {
        #expect(try CampaignWindow(parsing: "22:00-05:00").description == "22:00-05:00 UTC")
        #expect(try CampaignWindow(parsing: "22:00-05:00 UTC") == CampaignWindow(parsing: "22:00-05:00Z"))
        let offset = try CampaignWindow(parsing: "01:30-04:15+05:30")
        #expect(offset.start == 90 && offset.end == 255 && offset.offsetMinutes == 330)
        #expect(offset.description == "01:30-04:15+05:30")
        #expect(try CampaignWindow(parsing: "09:00-17:00-08:00").offsetMinutes == -480)
        #expect(try CampaignWindow(parsing: offset.description) == offset)
        for bad in ["25:00-03:00", "9:00-17:00", "09:00", "09:00-17:60", "09:00-17:00+15:00", "ab:cd-ef:gh", "09:00-09:00"] {
            let error = #expect(throws: OTAError.self) { try CampaignWindow(parsing: bad) }
            #expect(error?.code == .invalidParameter, "\(bad)")
            #expect(error?.message.hasPrefix("--window '\(bad)'") == true, "\(error?.message ?? "")")
        }
    }

    @Test("a window crossing midnight: open late and early, closed by day; it opens and closes when it says")
    func acrossMidnight() throws {
        #expect(Self.at(8) == Date(timeIntervalSince1970: 1_800_000_000))
        let window = try CampaignWindow(parsing: "22:00-05:00")
        #expect(window.contains(Self.at(23, 59)) && window.contains(Self.at(0)) && window.contains(Self.at(4, 59)) && window.contains(Self.at(22)))
        #expect(!window.contains(Self.at(5)) && !window.contains(Self.at(12)) && !window.contains(Self.at(21, 59)))
        #expect(window.opening(after: Self.at(12)) == Self.at(22))
        #expect(window.opening(after: Self.at(23)) == Self.at(23), "open now")
        #expect(window.closing(after: Self.at(23)) == Self.at(29), "05:00 the next day")
        #expect(window.closing(after: Self.at(3)) == Self.at(5))
        #expect(window.format(Self.at(22)) == "2027-01-15 22:00 UTC")
    }

    @Test("an offset moves the window: 09:00-17:00+02:00 is 07:00-15:00 UTC")
    func offsets() throws {
        let window = try CampaignWindow(parsing: "09:00-17:00+02:00")
        #expect(!window.contains(Self.at(6, 59)) && window.contains(Self.at(7)) && window.contains(Self.at(14, 59)) && !window.contains(Self.at(15)))
        #expect(window.opening(after: Self.at(16)) == Self.at(31), "07:00 UTC the next day")
        #expect(window.format(Self.at(7)) == "2027-01-15 09:00+02:00")
        let west = try CampaignWindow(parsing: "20:00-02:00-05:00")
        #expect(west.contains(Self.at(1)) && west.contains(Self.at(6, 59)) && !west.contains(Self.at(7)))
    }

    @Test("rollout groups: a stage per group in order, by address or advertised name, the rest last; unmatched entries returned")
    func groups() throws {
        let (stages, unmatched) = try CampaignPlan.stages(
            of: CampaignTargetSelectionTests.fleet,
            groups: [
                CampaignGroup(name: "canary", entries: ["meter-0003", "ZZ:99:99"]),
                CampaignGroup(name: "site-a", entries: ["AA:00:05", "AA:00:01"]),
            ])
        #expect(
            stages == [
                CampaignStage(name: "1 (canary)", devices: ["BB:00:03"]),
                CampaignStage(name: "2 (site-a)", devices: ["AA:00:01", "AA:00:05"]),
                CampaignStage(name: "3 (the rest)", devices: ["AA:00:02", "BB:00:04"]),
            ])
        #expect(unmatched == ["ZZ:99:99"])
        // Groups that take every device leave no empty "rest".
        let whole = try CampaignPlan.stages(
            of: Array(CampaignTargetSelectionTests.fleet.prefix(2)), groups: [CampaignGroup(name: "all", entries: ["lock-0001", "lock-0002"])])
        #expect(whole.stages.map { $0.name } == ["1 (all)"])
    }

    @Test("a group naming a device by address and by name reports neither entry as naming no device (the target-list fuzz target's oracle)")
    func groupNamingADeviceTwice() throws {
        let (stages, unmatched) = try CampaignPlan.stages(
            of: CampaignTargetSelectionTests.fleet, groups: [CampaignGroup(name: "canary", entries: ["BB:00:03", "meter-0003", "ZZ:99:99"])])
        #expect(stages.first == CampaignStage(name: "1 (canary)", devices: ["BB:00:03"]))
        #expect(unmatched == ["ZZ:99:99"])
    }

    @Test("rollout groups refuse a device in two groups, a group that names none of the devices, and no group")
    func groupRefusals() throws {
        #expect(throws: OTAError.self) {
            try CampaignPlan.stages(
                of: CampaignTargetSelectionTests.fleet,
                groups: [CampaignGroup(name: "a", entries: ["AA:00:01"]), CampaignGroup(name: "b", entries: ["lock-0001"])])
        }
        do {
            _ = try CampaignPlan.stages(of: CampaignTargetSelectionTests.fleet, groups: [CampaignGroup(name: "canary", entries: ["ZZ:99:99"])])
            Issue.record("a group naming no device was taken")
        } catch {
            #expect(error.code == .invalidParameter)
            #expect(error.message == "group 'canary' names none of the 5 devices the campaign's targets took")
        }
        #expect(throws: OTAError.self) { try CampaignPlan.stages(of: CampaignTargetSelectionTests.fleet, groups: []) }
    }
}
