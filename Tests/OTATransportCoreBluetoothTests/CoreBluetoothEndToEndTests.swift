// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolFramed
import OTAProtocolGeneric
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

/// The simulator transport's end-to-end updates, through the CoreBluetooth transport and the
/// stand-in instead.
@Suite struct CoreBluetoothEndToEndTests {
    static func sizes(for profile: DeviceProfile) -> [Int] {
        let mtu = profile.link.deviceMaximumMTU
        let write = mtu - 3
        return [1, write - 1, write, write + 1, mtu + 1, 200_000]
    }

    static let genericCases: [(DeviceProfile, Int)] =
        [DeviceProfile.esp32MTU23, .esp32S3MTU244TwoM].flatMap { profile in sizes(for: profile).map { (profile, $0) } }
        + [(DeviceProfile.esp32MTU185, 100_000), (.nrf52840, 100_000)]

    @Test(arguments: genericCases)
    func genericImageArrivesByteIdentical(profile: DeviceProfile, size: Int) async throws {
        let model = GenericDeviceModel()
        let harness = CoreBluetoothHarness(profile: profile, model: model)
        let image = try CoreBluetoothHarness.image(size: size)
        let outcome = try await harness.update(image, using: GenericClient())
        let report = try outcome.result.get()
        #expect(harness.flashContents(size) == (try image.allBytes()))
        #expect(model.installedImage?.size == size)
        #expect(model.installedImage?.crc32 == image.crc32)
        #expect(report.chunkSize == profile.link.deviceMaximumMTU - 3)
        #expect(report.bytesSent == size)
        #expect(harness.peripheral.writesDropped == 0)
    }

    static let framedCases: [(DeviceProfile, Int)] =
        [(DeviceProfile.esp32MTU23, [1, 11, 12, 13, 24, 50_000]), (.esp32S3MTU244TwoM, [1, 235, 236, 237, 248, 200_000])]
        .flatMap { profile, sizes in sizes.map { (profile, $0) } }

    @Test(arguments: framedCases)
    func framedImageArrivesByteIdentical(profile: DeviceProfile, size: Int) async throws {
        let harness = CoreBluetoothHarness(profile: profile, model: FramedDeviceModel())
        let image = try CoreBluetoothHarness.image(size: size)
        let outcome = try await harness.update(image, using: FramedClient())
        let report = try outcome.result.get()
        #expect(harness.flashContents(size) == (try image.allBytes()))
        #expect(report.bytesSent == size)
        #expect(report.chunkSize == profile.link.deviceMaximumMTU - 3 - FramedChunk.compactHeaderLength)
        #expect(outcome.states == [.connecting, .negotiating, .transferring, .verifying, .completed])
        #expect(harness.peripheral.writesDropped == 0)
    }
}
#endif
