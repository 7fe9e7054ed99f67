// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

/// Nordic Secure DFU against the simulated bootloader through the CoreBluetooth transport.
@Suite struct CoreBluetoothNordicTests {
    private func harness(profile: DeviceProfile = .nrf52840) -> (CoreBluetoothHarness, NordicBootloaderModel) {
        var configuration = NordicBootloaderModel.Configuration()
        configuration.installedSoftDevice = 0x0100
        let model = NordicBootloaderModel(configuration: configuration)
        return (CoreBluetoothHarness(profile: profile, model: model), model)
    }

    private func client(prn: Int = 12) -> NordicDFUClient {
        var configuration = NordicDFUConfiguration()
        configuration.packetReceiptInterval = prn
        return NordicDFUClient(configuration: configuration)
    }

    private func rawImage(size: Int) throws -> FirmwareImage {
        try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try CoreBluetoothHarness.image(size: size, seed: 3))
    }

    @Test(arguments: [(0, 1), (12, 241), (12, 244), (0, 245), (12, 4096), (0, 50_000), (12, 50_000)])
    func imagesArriveByteIdenticalWithAndWithoutReceipts(prn: Int, size: Int) async throws {
        let (harness, model) = harness()
        let image = try rawImage(size: size)
        let report = try await harness.update(image, using: client(prn: prn)).result.get()
        #expect(model.installedImage?.sha256 == SHA256.hash((try image.allBytes())))
        #expect(harness.flashContents(image.count) == (try image.allBytes()))
        #expect(report.bytesSent == image.count)
        #expect(harness.peripheral.writesDropped == 0)
    }

    @Test func aDisconnectMidObjectResumesFromTheBootloadersOffset() async throws {
        let (harness, model) = harness()
        let image = try rawImage(size: 50_000)
        var faults = LinkFaults()
        faults.disconnectAtBytes = [20_000]
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: client())
        let report = try outcome.result.get()
        #expect(report.resumes == 1)
        #expect(model.installedImage?.sha256 == SHA256.hash((try image.allBytes())))
        #expect(outcome.notes.contains { $0.hasPrefix("resuming: bootloader holds") })
    }

    @Test func bluetoothOffMidUpdateResumes() async throws {
        let (harness, model) = harness()
        let image = try rawImage(size: 100_000)
        let outcome = try await harness.update(image, using: client()) { world in
            try? await world.clock.sleep(for: .milliseconds(1200))
            world.powerOff()
            try? await world.clock.sleep(for: .seconds(3))
            world.powerOn()
        }
        let report = try outcome.result.get()
        #expect(report.resumes >= 1)
        #expect(model.installedImage?.sha256 == SHA256.hash((try image.allBytes())))
    }
}
#endif
