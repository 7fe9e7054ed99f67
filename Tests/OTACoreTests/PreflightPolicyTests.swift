import Foundation
import OTACore
import Testing

private struct NoProtocol: UpdateProtocol {
    var requirements: [CharacteristicRequirement] { [] }
    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome { .accepted }
}

private final class NoDevice: DeviceModel {
    var services: [GATTServiceDefinition] { [] }
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus { .success }
}

private let registry = ProtocolRegistry([
    ProtocolDescriptor(
        name: "alpha", summary: "alpha", parameters: [],
        makeClient: { (_) throws(OTAError) in NoProtocol() }, makeDeviceModel: { (_) throws(OTAError) in NoDevice() }
    )
])

/// A device whose Battery Level never answers (the read waits on its own clock) and whose
/// model number is refused with an ATT error.
private final class SilentBatteryTransport: Transport {
    let never = TestClock()
    let link = LinkParameters(attMTU: 23, maximumWriteWithoutResponse: 20, maximumWriteWithResponse: 20)
    let characteristics: [CharacteristicID: CharacteristicProperties] = [
        StandardServices.batteryLevel: .read, StandardServices.modelNumber: .read,
    ]
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {}
    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        guard characteristic == StandardServices.batteryLevel else {
            throw TransportError(.attError(0x05), "device answered the read with insufficient authentication")
        }
        try? await never.sleep(for: .seconds(3600))
        return Data([100])
    }
    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> { AsyncStream { $0.finish() } }
    var disconnections: AsyncStream<DisconnectReason> { AsyncStream { _ in } }
    func disconnect() async {}
}

private func preflight(_ policy: PreflightPolicy) -> Preflight {
    Preflight(policy: policy, responseTimeout: .seconds(1), clock: ContinuousClock())
}

@Suite struct PreflightPolicyTests {
    @Test func aFamilyCanRequireABatteryLevel() throws {
        let catalog = try DeviceCatalog.parse(
            Data(#"{"catalog": 1, "families": [{"name": "x", "match": {"name": "X*"}, "protocol": "alpha", "minBattery": 30}]}"#.utf8),
            source: "c.json", registry: registry
        )
        #expect(catalog.families.first?.minimumBattery == 30)
        let error = try #require(throws: OTAError.self) {
            try DeviceCatalog.parse(
                Data(#"{"catalog": 1, "families": [{"name": "x", "match": {"name": "X*"}, "protocol": "alpha", "minBattery": 130}]}"#.utf8),
                source: "c.json", registry: registry
            )
        }
        #expect(error.message.hasPrefix("c.json: families[0].minBattery:"), "\(error.message)")
    }

    @Test(arguments: [
        (HardwareCompatibility.Rule.revisions(["rev-B", "rev-C"]), "rev-b", HardwareCompatibility.Verdict.matches),
        (.revisions(["rev-B", "rev-C"]), " REV-C\0", .matches),
        (.revisions(["rev-B", "rev-C"]), "rev-A", .mismatch),
        (.integer(52), "52", .matches),
        (.integer(52), "0x34", .matches),
        (.integer(52), "53", .mismatch),
        (.integer(52), "nRF52840 rev 2", .notComparable),
    ])
    func hardwareRules(rule: HardwareCompatibility.Rule, revision: String, verdict: HardwareCompatibility.Verdict) {
        #expect(HardwareCompatibility(rule, source: "s", whenUnknown: .refuse).verdict(for: revision) == verdict)
    }

    @Test func nothingToCheckIsNoteNotRefusal() {
        var policy = PreflightPolicy()
        policy.minimumBattery = .init(percent: 30, source: "--min-battery")
        policy.hardware = [HardwareCompatibility(.integer(52), source: "app.bin's init packet", whenUnknown: .note("the bootloader checks hw_version itself"))]
        let findings = preflight(policy).check(DeviceInformation(unread: ["no Device Information service", "no Battery service"]))
        #expect(findings.refusals.isEmpty)
        #expect(
            findings.notes == [
                "battery level unknown, so the 30% minimum (--min-battery) is not checked",
                "the device's hardware revision is unknown, so hw_version 52 in app.bin's init packet is not compared here (the bootloader checks hw_version itself)",
            ])
    }

    @Test func eachReadIsBoundedByTheResponseTimeoutOnTheInjectedClock() async throws {
        let clock = TestClock()
        let transport = SilentBatteryTransport()
        let reading = Task {
            try await Preflight(policy: PreflightPolicy(), responseTimeout: .seconds(10), clock: clock).read(over: transport)
        }
        #expect(await eventually { clock.sleeperCount == 1 && transport.never.sleeperCount == 1 })
        clock.advance(by: .seconds(10))
        let information = try await reading.value
        #expect(information.batteryLevel == nil)
        #expect(
            information.unread == [
                "no manufacturer name",
                "model number: device answered the read with insufficient authentication",
                "no hardware revision", "no firmware revision",
                "battery level: timed out after 10.0 s",
            ])
    }

    @Test func theBatteryAtTheMinimumIsEnough() {
        var policy = PreflightPolicy()
        policy.minimumBattery = .init(percent: 30, source: "--min-battery")
        #expect(preflight(policy).check(DeviceInformation(batteryLevel: 30)).refusals.isEmpty)
        #expect(preflight(policy).check(DeviceInformation(batteryLevel: 29)).refusals.map(\.code) == [.deviceNotReady])
    }

    @Test func aPackageHardwareListWaitsForTheDeviceWhenTheFamilyNamesNoRevision() throws {
        let package = FirmwarePackage(
            name: nil, version: nil, protocolName: nil, families: [], hardware: ["rev-b"], images: [], source: "p/manifest.json"
        )
        let family = DeviceFamily(name: "f", match: .init(namePattern: GlobPattern("*")), protocolName: "alpha", source: "c.json")
        try package.checkCompatibility(with: family, device: "d")
        try package.checkCompatibility(with: nil, device: "d")
        #expect(package.hardwareCompatibility(checkedByFamily: false)?.whenUnknown == .refuse)
        #expect(package.hardwareCompatibility(checkedByFamily: true)?.whenUnknown == .note("the catalog family's revision matched"))
    }
}
