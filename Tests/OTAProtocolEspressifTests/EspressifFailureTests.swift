import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolEspressif

@Suite struct EspressifFailureTests {
    /// `ble_ota_raw` checks the sector CRC: a payload byte flipped on the way is answered with a
    /// CRC error, the sector goes again from packet 0, and the image arrives intact.
    @Test(arguments: [DeviceProfile.esp32MTU23, .esp32S3MTU244OneM])
    func aCorruptedPacketIsCaughtBySectorCRCAndResent(profile: DeviceProfile) async throws {
        let harness = EspressifHarness(profile: profile, variant: .raw, faults: .init(corrupt: [40]))
        let image = try EspressifHarness.image(size: 30_000)
        let outcome = try await harness.update(image, variant: .raw)
        let report = try outcome.result.get()
        #expect(harness.base.flashContents(image.count) == image.bytes)
        #expect(report.restarts == 0)
        let sector = 40 / EspressifFirmwarePacket.packets(sector: 0, data: Data(count: 4096), payloadSize: report.chunkSize).count
        #expect(outcome.notes.contains("device answered sector \(sector): CRC error, expects sector \(sector); sending sector \(sector) again from packet 0"))
        #expect(harness.model.log == ["sector \(sector): CRC error"])
    }

    /// The same through the simulator's own link fault, on writes without response: whatever
    /// byte it damages (header or payload), the device's answer gets the sector sent again.
    @Test func aLinkCorruptionOnRawIsRecovered() async throws {
        let harness = EspressifHarness(profile: .esp32MTU185, variant: .raw)
        var faults = LinkFaults()
        faults.corruptWrites = [10, 60, 61]
        harness.device.faults = faults
        let image = try EspressifHarness.image(size: 40_000)
        let outcome = try await harness.update(image, variant: .raw)
        _ = try outcome.result.get()
        #expect(harness.base.flashContents(image.count) == image.bytes)
        #expect(outcome.notes.contains { $0.contains("sending sector") })
    }

    /// A packet lost on the way to `ble_ota_raw`: the device answers the next packet at once with
    /// a payload length error and every later packet of the sector too (it expects packet 0
    /// again); the client lets those stale answers pass, sends the sector once more and completes.
    @Test(arguments: [DeviceProfile.esp32MTU23, .esp32S3MTU244TwoM])
    func aDroppedPacketOnRawIsResentOnceDespiteTheStaleAnswers(profile: DeviceProfile) async throws {
        let harness = EspressifHarness(profile: profile, variant: .raw)
        var faults = LinkFaults()
        faults.dropWrites = [3]
        harness.device.faults = faults
        let image = try EspressifHarness.image(size: 20_000)
        let outcome = try await harness.update(image, variant: .raw)
        let report = try outcome.result.get()
        #expect(harness.base.flashContents(image.count) == image.bytes)
        #expect(report.restarts == 0)
        #expect(outcome.notes.filter { $0.contains("sending sector 0 again") }.count == 1, "\(outcome.notes)")
    }

    /// `ble_ota` (Bluedroid, NimBLE) does not check the sector CRC: the same damage is written to
    /// flash and the transfer succeeds. Only the app image's own checksum and SHA-256, checked by
    /// `esp_ota_end` on the device, can catch it — which is why the client refuses images
    /// without a valid one.
    @Test(arguments: [EspressifVariant.bluedroid, .nimble])
    func bleOTAWritesACorruptedSectorWithoutNoticing(variant: EspressifVariant) async throws {
        let harness = EspressifHarness(profile: .esp32S3MTU244OneM, variant: variant, faults: .init(corrupt: [5]))
        let image = try EspressifHarness.appImage(payload: 20_000)
        _ = try await harness.update(image, variant: variant, check: .espApp).result.get()
        let held = harness.base.flashContents(image.count)
        #expect(held != image.bytes)
        #expect(throws: OTAError.self) { try EspressifAppImageFormat.check(try FirmwareImage(bytes: held, name: "flash")) }
    }

    /// Bluedroid logs a packet out of sequence and ignores it; the sector is short, and without a
    /// CRC check the device acknowledges it (the hazard the notes describe). NimBLE marks the
    /// sector bad and asks for it again; raw answers at once.
    @Test func outOfSequencePacketsAreLoggedAndIgnored() async throws {
        let model = EspressifDeviceModel(variant: .bluedroid)
        let peripheral = RecordingPeripheral()
        _ = model.write(EspressifCommand.start(length: 100).encoded, to: model.profile.command, kind: .withResponse, peripheral: peripheral)
        let packets = EspressifFirmwarePacket.packets(sector: 0, data: Data(repeating: 0xAB, count: 100), payloadSize: 40)
        _ = model.write(packets[1].packet.encoded, to: model.profile.firmware, kind: .withResponse, peripheral: peripheral)
        #expect(model.log == ["packet 1 of sector 0 out of sequence (expected 0)"])
        #expect(peripheral.sent.count == 1, "only START's ACK")
        for (packet, _) in packets { _ = model.write(packet.encoded, to: model.profile.firmware, kind: .withResponse, peripheral: peripheral) }
        #expect(EspressifSectorAck(decoding: peripheral.sent.last!)?.status == .success)

        for (variant, status) in [(EspressifVariant.nimble, EspressifSectorStatus.sectorIndexError), (.raw, .payloadLengthError)] {
            let model = EspressifDeviceModel(variant: variant)
            let peripheral = RecordingPeripheral()
            _ = model.write(EspressifCommand.start(length: 100).encoded, to: model.profile.command, kind: .withResponse, peripheral: peripheral)
            for index in [0, 2, 1] {
                _ = model.write(packets[index].packet.encoded, to: model.profile.firmware, kind: .withResponse, peripheral: peripheral)
            }
            #expect(EspressifSectorAck(decoding: peripheral.sent.last!)?.status == status, "\(variant)")
        }
    }

    /// The progress characteristic (unused by the client) reads the share of the image written.
    @Test func theProgressCharacteristicReadsPercent() throws {
        let model = EspressifDeviceModel()
        let peripheral = RecordingPeripheral()
        let progress = CharacteristicID(service: model.profile.service, characteristic: EspressifGATTProfile.progressCharacteristic)
        #expect(try model.read(progress, peripheral: peripheral).get() == Data([0]))
        _ = model.write(EspressifCommand.start(length: 8192).encoded, to: model.profile.command, kind: .withResponse, peripheral: peripheral)
        for (packet, _) in EspressifFirmwarePacket.packets(sector: 0, data: Data(count: 4096), payloadSize: 200) {
            _ = model.write(packet.encoded, to: model.profile.firmware, kind: .withResponse, peripheral: peripheral)
        }
        #expect(try model.read(progress, peripheral: peripheral).get() == Data([50]))
        #expect(throws: ATTStatus.self) { try model.read(model.profile.command, peripheral: peripheral).get() }
    }

    /// The link drops mid-transfer: the engine connects again and the update restarts from byte 0
    /// (the component cannot resume), START opening a new session; the image arrives intact.
    @Test(arguments: [DeviceProfile.esp32MTU23, .esp32S3MTU244TwoM])
    func aLostLinkRestartsFromByteZero(profile: DeviceProfile) async throws {
        let harness = EspressifHarness(profile: profile, faults: .init(dropLinkAt: [300]))
        let image = try EspressifHarness.image(size: 100_000)
        let report = try await harness.update(image).result.get()
        #expect(report.restarts == 1)
        #expect(report.resumes == 0)
        #expect(harness.base.flashContents(image.count) == image.bytes)
        #expect(harness.model.log == ["disconnected: session discarded"])
    }

    /// A device that keeps its session across the lost link rejects the next START; the client
    /// answers with STOP and START again, and the restart completes.
    @Test func aSessionLeftOpenIsClearedWithStop() async throws {
        let harness = EspressifHarness(profile: .esp32S3MTU244OneM, sessionSurvivesDisconnect: true, faults: .init(dropLinkAt: [100]))
        let image = try EspressifHarness.image(size: 60_000)
        let report = try await harness.update(image).result.get()
        #expect(report.restarts == 1)
        #expect(harness.base.flashContents(image.count) == image.bytes)
        // 18 packets per sector at MTU 247: the link drops in sector 5, after five sectors.
        #expect(
            harness.model.log == [
                "START (60000 bytes) rejected: already started", "STOP after 20480 of 60000 bytes: esp_ota_end would fail",
            ])
    }

    /// On `ble_ota_raw` the simulator's own disconnect fault applies (writes without response).
    @Test func aLostLinkOnRawRestarts() async throws {
        let harness = EspressifHarness(profile: .esp32MTU185, variant: .raw)
        var faults = LinkFaults()
        faults.disconnectAtBytes = [50_000]
        harness.device.faults = faults
        let image = try EspressifHarness.image(size: 120_000)
        let report = try await harness.update(image, variant: .raw).result.get()
        #expect(report.restarts == 1)
        #expect(harness.base.flashContents(image.count) == image.bytes)
    }

    /// The sector's 0xFF packet is lost: no ACK comes, the client waits the response timeout,
    /// sends the sector again and completes.
    @Test func aMissingAckResendsTheSectorAfterTheTimeout() async throws {
        // At MTU 247 (241-byte payloads) a 4096-byte sector is 18 packets: write 17 is sector 0's 0xFF packet.
        let last = EspressifFirmwarePacket.packets(sector: 0, data: Data(count: 4096), payloadSize: 241).count - 1
        #expect(last == 17)
        var harness = EspressifHarness(profile: .esp32S3MTU244TwoM, faults: .init(swallow: [last]))
        harness.base.configuration.responseTimeout = .seconds(2)
        let image = try EspressifHarness.image(size: 10_000)
        let outcome = try await harness.update(image)
        _ = try outcome.result.get()
        #expect(harness.base.flashContents(image.count) == image.bytes)
        #expect(outcome.notes.contains("no ACK for sector 0; sending sector 0 again from packet 0"))
        #expect(outcome.virtualTime > .seconds(2))
    }

    @Test func aDeviceThatFallsSilentFailsAfterTheRetries() async throws {
        var harness = EspressifHarness(profile: .esp32S3MTU244TwoM, faults: .init(swallowFrom: 20))
        harness.base.configuration.responseTimeout = .seconds(2)
        harness.base.configuration.resume.maximumAttempts = 0
        let error = try await harness.update(try EspressifHarness.image(size: 10_000)).failure()
        #expect(error.code == .timeout)
        #expect(error.message.contains("no ACK for sector 1, after sending it 4 times"))
    }

    @Test func anImageLargerThanFlashIsRejectedAtStart() async throws {
        let harness = EspressifHarness(profile: .esp32S3MTU244TwoM)
        let image = try EspressifHarness.image(size: harness.device.flash.capacity + 1)
        var base = harness.base
        base.configuration.resume.maximumAttempts = 0
        let error = try await base.update(image, using: EspressifClient(configuration: .init(imageCheck: .none))).failure()
        #expect(
            harness.model.log == [
                "START (\(image.count) bytes) rejected: bad length", "STOP rejected: not started", "START (\(image.count) bytes) rejected: bad length",
            ])
        #expect(error.code == .deviceRejected)
        #expect(error.message.contains("device rejected START for \(image.count) bytes, again after STOP"))
    }
}

/// A peripheral context that records notifications, for the device model driven directly.
final class RecordingPeripheral: PeripheralContext, @unchecked Sendable {
    let flash: any FlashStorage = NORFlash(capacity: 1 << 20, sectorSize: 4096)
    private(set) var sent: [Data] = []
    func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }
    func notify(_ value: Data, on characteristic: CharacteristicID) { sent.append(value) }
    func reboot(after delay: Duration) {}
}
