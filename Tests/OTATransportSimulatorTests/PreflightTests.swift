import Foundation
import OTACore
import OTATransportSimulator
import Testing

/// Streams the image to ``RecordingDevice/data``: the smallest protocol with a first write to
/// refuse before.
private struct StreamToRecorder: UpdateProtocol {
    var requirements: [CharacteristicRequirement] {
        [CharacteristicRequirement("Data", RecordingDevice.data, properties: .writeWithoutResponse)]
    }
    var dataWrites: DataWriteShape { DataWriteShape(kind: .withoutResponse) }

    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        context.enter(.transferring)
        try await context.stream(image, range: 0..<image.count, to: RecordingDevice.data)
        return .accepted
    }
}

private func image(size: Int) throws -> FirmwareImage {
    try FirmwareImage(bytes: Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }), name: "preflight.bin")
}

/// Runs one update on `world`'s device; returns the result and every event.
private func update(
    _ world: SimulatorWorld, image: FirmwareImage, policy: PreflightPolicy
) async throws -> (result: Result<UpdateReport, OTAError>, events: [UpdateEvent]) {
    var configuration = UpdateConfiguration()
    configuration.preflight = policy
    let engine = UpdateEngine(configuration: configuration, clock: world.simulation.clock)
    let connector = SimulatedConnector(device: world.device)
    return try await world.simulation.run {
        let (stream, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
        async let collected: [UpdateEvent] = {
            var events: [UpdateEvent] = []
            for await event in stream { events.append(event) }
            return events
        }()
        let result: Result<UpdateReport, OTAError>
        do throws(OTAError) {
            result = .success(try await engine.update(image, using: StreamToRecorder(), connector: connector, events: sink))
        } catch {
            result = .failure(error)
        }
        return (result, await collected)
    }
}

private func deviceEvents(_ events: [UpdateEvent]) -> [DeviceInformation] {
    events.compactMap { if case .device(let information, _) = $0 { information } else { nil } }
}

private func notes(_ events: [UpdateEvent]) -> [String] {
    events.compactMap { if case .note(let text, _) = $0 { text } else { nil } }
}

@Suite struct PreflightTests {
    @Test func readsTheStandardServicesOfABuiltInProfile() async throws {
        let world = SimulatorWorld(profile: .nrf52840)
        let preflight = Preflight(policy: PreflightPolicy(), responseTimeout: .seconds(10), clock: world.simulation.clock)
        let connector = SimulatedConnector(device: world.device)
        let information = try await world.simulation.run { () async throws -> DeviceInformation in
            let transport = try await connector.connect()
            defer { Task { await transport.disconnect() } }
            return try await preflight.read(over: transport)
        }
        #expect(
            information
                == DeviceInformation(
                    manufacturer: "Nordic Semiconductor", modelNumber: "nRF52840", hardwareRevision: "52", firmwareRevision: "1.0.0", batteryLevel: 88
                ))
        #expect(information.summary == "model nRF52840 by Nordic Semiconductor, hardware rev 52, firmware 1.0.0, battery 88%")
    }

    @Test func aDeviceWithoutTheServicesSaysWhatCouldNotBeRead() async throws {
        var profile = DeviceProfile.esp32S3MTU244TwoM
        profile.standardServices = .none
        let world = SimulatorWorld(profile: profile)
        let outcome = try await update(world, image: try image(size: 5_000), policy: PreflightPolicy())
        #expect(throws: Never.self) { try outcome.result.get() }
        let information = try #require(deviceEvents(outcome.events).first)
        #expect(information == DeviceInformation(unread: ["no Device Information service", "no Battery service"]))
        #expect(information.summary == "nothing read (no Device Information service, no Battery service)")
    }

    @Test func aDeviceWithSomeOfTheServiceListsWhatItLacks() async throws {
        var profile = DeviceProfile.esp32S3MTU244TwoM
        profile.standardServices = StandardServicesProfile(modelNumber: "Probe", batteryLevel: 50)
        let world = SimulatorWorld(profile: profile)
        let outcome = try await update(world, image: try image(size: 1_000), policy: PreflightPolicy())
        let information = try #require(deviceEvents(outcome.events).first)
        #expect(information.summary == "model Probe, battery 50%; not read: no manufacturer name, no hardware revision, no firmware revision")
    }

    @Test func batteryBelowTheMinimumIsRefusedBeforeTheFirstWrite() async throws {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        world.device.batteryLevel = 12
        var policy = PreflightPolicy()
        policy.minimumBattery = .init(percent: 30, source: "catalog family 'acme-sensor'")
        let outcome = try await update(world, image: try image(size: 20_000), policy: policy)
        let error = try #require(throws: OTAError.self) { try outcome.result.get() }
        #expect(error.code == .deviceNotReady)
        #expect(error.message == "battery at 12%, below the 30% this update needs (catalog family 'acme-sensor'); charge the device or pass --force")
        #expect(world.model.received.isEmpty)
        #expect(!outcome.events.contains { if case .state(.transferring, _, _) = $0 { true } else { false } })
    }

    @Test func hardwareTheFirmwareDoesNotDeclareIsRefusedBeforeTheFirstWrite() async throws {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)  // hardware rev-C
        var policy = PreflightPolicy()
        policy.hardware = [HardwareCompatibility(.revisions(["rev-A", "rev-B"]), source: "pkg/manifest.json hardware", whenUnknown: .refuse)]
        let outcome = try await update(world, image: try image(size: 20_000), policy: policy)
        let error = try #require(throws: OTAError.self) { try outcome.result.get() }
        #expect(error.code == .incompatible)
        #expect(
            error.message
                == "device hardware revision 'rev-C' does not match the package (rev-A, rev-B in pkg/manifest.json hardware); use firmware built for 'rev-C' or pass --force"
        )
        #expect(world.model.received.isEmpty)
    }

    @Test func forceLetsBothThroughAndSaysSo() async throws {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        world.device.batteryLevel = 12
        var policy = PreflightPolicy()
        policy.minimumBattery = .init(percent: 30, source: "--min-battery")
        policy.hardware = [HardwareCompatibility(.integer(52), source: "app.bin's init packet", whenUnknown: .refuse)]
        policy.force = true
        let image = try image(size: 20_000)
        let outcome = try await update(world, image: image, policy: policy)
        #expect(throws: Never.self) { try outcome.result.get() }
        #expect(!world.model.received.isEmpty)
        #expect(notes(outcome.events).contains("battery at 12%, below the 30% this update needs (--min-battery); updating anyway (--force)"))
        #expect(
            notes(outcome.events).contains(
                "the device's hardware revision 'rev-C' is not an integer, so the package's hardware (hw_version 52 in app.bin's init packet) cannot be checked; updating anyway (--force)"
            ))
    }

    @Test func aMatchingDeviceGoesThroughAndTheReadsCountAsSetup() async throws {
        let world = SimulatorWorld(profile: .nrf52840)  // hardware "52", battery 88 %
        var policy = PreflightPolicy()
        policy.minimumBattery = .init(percent: 30, source: "--min-battery")
        policy.hardware = [HardwareCompatibility(.integer(52), source: "app.bin's init packet", whenUnknown: .note("the bootloader checks"))]
        let outcome = try await update(world, image: try image(size: 20_000), policy: policy)
        let report = try outcome.result.get()
        #expect(report.connectDuration > world.device.profile.link.connectionSetupTime)
        #expect(notes(outcome.events).isEmpty)
    }

    @Test func theBatteryDrainsAsDataArrives() async throws {
        var profile = DeviceProfile.esp32S3MTU244TwoM
        profile.standardServices.batteryLevel = 31
        profile.standardServices.batteryDrainPer100kB = 1
        let world = SimulatorWorld(profile: profile)
        var policy = PreflightPolicy()
        policy.minimumBattery = .init(percent: 30, source: "--min-battery")
        let image = try image(size: 250_000)
        let first = try await update(world, image: image, policy: policy)
        #expect(throws: Never.self) { try first.result.get() }
        #expect(deviceEvents(first.events).first?.batteryLevel == 31)
        #expect(world.device.batteryLevel == 28)  // 31 % − 2.5 points, rounded down
        let second = try await update(world, image: image, policy: policy)
        let error = try #require(throws: OTAError.self) { try second.result.get() }
        #expect(error.message == "battery at 28%, below the 30% this update needs (--min-battery); charge the device or pass --force")
    }
}
