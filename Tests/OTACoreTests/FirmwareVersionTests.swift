import OTACore
import Testing

@Suite struct FirmwareVersionTests {
    @Test(arguments: [
        ("1.4.0", [1, 4, 0]), ("v2.0.1", [2, 0, 1]), ("1.2.3+4", [1, 2, 3]), ("1.2.3.4", [1, 2, 3, 4]), ("2.0.1-beta", [2, 0, 1]),
        ("3", [3]), (" 1.2 ", [1, 2]), ("1.2.", [1, 2]), ("1.2.3.4.5", [1, 2, 3, 4]),
    ])
    func readsTheLeadingNumbers(text: String, numbers: [Int]) throws {
        #expect(try #require(FirmwareVersion(text)).numbers == numbers)
    }

    @Test(arguments: ["", "beta", "rev-C", "v", ".1", "１.２", "99999999999.1"])
    func refusesWhatIsNoVersion(text: String) {
        #expect(FirmwareVersion(text) == nil)
    }

    @Test func comparesNumberByNumberWithMissingNumbersAsZero() throws {
        func v(_ text: String) throws -> FirmwareVersion { try #require(FirmwareVersion(text)) }
        #expect(try v("1.10.0") > v("1.9.9"))
        #expect(try v("2.0") > v("1.99.99"))
        #expect(try v("1.2").isSameVersion(as: v("1.2.0")))
        #expect(try !(v("1.2") < v("1.2.0")) && !(v("1.2.0") < v("1.2")))
        #expect(try v("1.2.3.4") > v("1.2.3"))
        #expect(try v("2.0.1-beta").isSameVersion(as: v("2.0.1")))
    }

    func findings(device: String?, package: String, allowingDowngrade: Bool = false) throws -> Preflight.Findings {
        var policy = PreflightPolicy()
        policy.firmwareVersion = VersionRequirement(
            version: try #require(FirmwareVersion(package)), source: "the package manifest", allowsDowngrade: allowingDowngrade)
        return Preflight(policy: policy, responseTimeout: .seconds(1), clock: ContinuousClock()).check(DeviceInformation(firmwareRevision: device))
    }

    @Test func aDowngradeIsRefusedUnlessAllowed() throws {
        let refused = try findings(device: "2.0.1", package: "1.5.0")
        #expect(
            refused.refusals.map(\.message) == [
                "the device runs firmware 2.0.1, newer than the 1.5.0 of the package manifest; pass --allow-downgrade to install an older version"
            ])
        #expect(refused.refusals.first?.code == .incompatible)
        let allowed = try findings(device: "2.0.1", package: "1.5.0", allowingDowngrade: true)
        #expect(allowed.refusals.isEmpty)
        #expect(allowed.notes.contains { $0.contains("installing the older version (--allow-downgrade)") })
    }

    @Test func anUpgradeSameVersionOrUnknownDeviceGoesOnWithANote() throws {
        #expect(try findings(device: "1.4.0", package: "1.5.0").notes == ["version: device 1.4.0 → 1.5.0 (the package manifest)"])
        #expect(try findings(device: "1.5", package: "1.5.0").notes.first?.contains("already runs 1.5") == true)
        #expect(try findings(device: nil, package: "1.5.0").notes.first?.contains("firmware version is unknown") == true)
        #expect(try findings(device: "build-7", package: "1.5.0").notes.first?.contains("'build-7' is not a version") == true)
        #expect(try findings(device: nil, package: "1.5.0").refusals.isEmpty)
    }
}
