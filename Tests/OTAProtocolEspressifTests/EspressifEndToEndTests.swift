import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolEspressif

@Suite struct EspressifEndToEndTests {
    /// Sizes around the packet payload, the MTU and the 4 KB sector boundaries.
    static func sizes(for profile: DeviceProfile) -> [Int] {
        let mtu = profile.link.deviceMaximumMTU
        let payload = mtu - 6
        return [1, payload - 2, payload - 1, payload, payload + 1, mtu, 4095, 4096, 4097, 8191, 8192, 8193, 30_000]
    }

    static let cases: [(DeviceProfile, Int)] = DeviceProfile.builtIn.flatMap { profile in sizes(for: profile).map { (profile, $0) } }

    @Test(arguments: cases)
    func imageArrivesByteIdentical(profile: DeviceProfile, size: Int) async throws {
        let harness = EspressifHarness(profile: profile)
        let image = try EspressifHarness.image(size: size)
        let report = try await harness.update(image).result.get()
        #expect(harness.base.flashContents(size) == image.bytes)
        #expect(harness.model.installedLength == size)
        #expect(report.chunkSize == profile.link.deviceMaximumMTU - 6)
        #expect(report.restarts == 0)
        #expect(harness.model.log.isEmpty, "\(harness.model.log)")
    }

    /// NimBLE and raw (raw written without response) on every profile, across a sector boundary.
    @Test(arguments: [EspressifVariant.nimble, .raw], DeviceProfile.builtIn)
    func theOtherVariantsArriveByteIdentical(variant: EspressifVariant, profile: DeviceProfile) async throws {
        for size in [4097, 30_000] {
            let harness = EspressifHarness(profile: profile, variant: variant)
            let image = try EspressifHarness.image(size: size, seed: UInt64(size))
            _ = try await harness.update(image, variant: variant).result.get()
            #expect(harness.base.flashContents(size) == image.bytes)
            #expect(harness.model.installedLength == size && harness.model.log.isEmpty)
        }
    }

    @Test(arguments: EspressifVariant.allCases, [DeviceProfile.esp32MTU23, .esp32S3MTU244TwoM])
    func everyVariantTakesAnAppImage(variant: EspressifVariant, profile: DeviceProfile) async throws {
        let harness = EspressifHarness(profile: profile, variant: variant)
        let image = try EspressifHarness.appImage(payload: 20_000)
        _ = try await harness.update(image, variant: variant, check: .espApp).result.get()
        #expect(harness.base.flashContents(image.count) == image.bytes)
        #expect(harness.model.installedLength == image.count)
    }

    @Test func eventsTellTheStoryInOrder() async throws {
        let harness = EspressifHarness(profile: .esp32S3MTU244TwoM)
        let outcome = try await harness.update(try EspressifHarness.image(size: 50_000))
        _ = try outcome.result.get()
        #expect(outcome.states == [.connecting, .negotiating, .transferring, .verifying, .completed])
        let acknowledged = outcome.events.compactMap { event -> Int? in
            if case .progress(let progress, _) = event { return progress.bytesAcknowledged }
            return nil
        }
        #expect(acknowledged.last == 50_000)
        #expect(zip(acknowledged, acknowledged.dropFirst()).allSatisfy { $0 <= $1 })
    }

    /// `ble_ota` declares the firmware characteristic Write + Indicate: a client that writes
    /// without response is stopped by the requirements check, before anything is sent.
    @Test func bleOTARefusesWritesWithoutResponse() async throws {
        let harness = EspressifHarness(profile: .esp32S3MTU244TwoM, variant: .bluedroid)
        let error = try await harness.update(try EspressifHarness.image(size: 5000), variant: .raw).failure()
        #expect(error.code == .missingCharacteristic)
        #expect(harness.model.installedLength == nil)
    }

    @Test func theDefaultFamilyRecognisesTheDemoDevice() throws {
        let family = try #require(EspressifProtocol.descriptor.defaultFamily)
        let demo = try #require(EspressifProtocol.descriptor.demoDevices.first)
        #expect(family.match.services == [GATTUUID("8018")!])
        #expect(demo.name == "esp-lamp")
        #expect(EspressifDeviceModel().services.map(\.uuid) == family.match.services)
        #expect(demo.manufacturerData.keys.sorted() == [0x02E5])
    }
}

@Suite struct EspressifWriteKindTests {
    /// What write with response costs: the same 200 kB on the same link, `ble_ota` (a request per
    /// packet) against `ble_ota_raw` (writes without response, one sector at a time).
    @Test func writeWithoutResponseOnRawIsSeveralTimesFaster() async throws {
        let image = try EspressifHarness.image(size: 200_000)
        var times: [EspressifVariant: Duration] = [:]
        for variant in [EspressifVariant.bluedroid, .raw] {
            let harness = EspressifHarness(profile: .esp32S3MTU244TwoM, variant: variant)
            let outcome = try await harness.update(image, variant: variant)
            _ = try outcome.result.get()
            #expect(harness.base.flashContents(image.count) == image.bytes)
            times[variant] = outcome.virtualTime
        }
        let request = try #require(times[.bluedroid])
        let command = try #require(times[.raw])
        #expect(command * 3 < request)
    }
}
