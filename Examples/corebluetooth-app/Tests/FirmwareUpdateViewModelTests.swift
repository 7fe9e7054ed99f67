// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothAppExample
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolFramed
import OTATransportCoreBluetooth
import OTATransportSimulator
import Testing

@Suite struct FirmwareUpdateViewModelTests {
    private func image(size: Int) throws -> FirmwareImage {
        var random = SeededRandom(seed: 4)
        return try FirmwareImage(bytes: Data((0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }), name: "app.bin")
    }

    /// Runs one update through the model, with Bluetooth switched off for 3 s on the way if asked.
    @MainActor
    private func run(bluetoothOff: Bool) async throws -> (FirmwareUpdateViewModel, SimulatedDevice, FirmwareImage) {
        let world = StandInWorld(seed: 2)
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: FramedDeviceModel(), simulation: world.simulation)
        let handle = world.addPeripheral(device)
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let connector = central.connector(for: handle.identifier)
        let image = try image(size: 120_000)
        let model = FirmwareUpdateViewModel()
        await model.run { sink async throws(OTAError) -> UpdateReport in
            let engine = UpdateEngine(clock: world.clock)
            let result: Result<UpdateReport, OTAError>
            do {
                result = try await world.run {
                    async let side: Void = {
                        guard bluetoothOff else { return }
                        try? await world.clock.sleep(for: .milliseconds(900))
                        world.powerOff()
                        try? await world.clock.sleep(for: .seconds(3))
                        world.powerOn()
                    }()
                    let result: Result<UpdateReport, OTAError>
                    do throws(OTAError) {
                        result = .success(try await engine.update(image, using: FramedClient(), connector: connector, events: sink))
                    } catch {
                        result = .failure(error)
                    }
                    await side
                    return result
                }
            } catch {
                throw OTAError(.internal, "\(error)")
            }
            return try result.get()
        }
        return (model, device, image)
    }

    @MainActor
    @Test func anUpdateEndsCompletedWithTheGuidanceShownWhileItRan() async throws {
        let (model, device, image) = try await run(bluetoothOff: false)
        #expect(model.screen.phase == .completed)
        #expect(model.screen.progress == 1)
        #expect(!model.screen.keepAppOpen)
        #expect(model.report?.bytesSent == image.count)
        #expect(device.flash.read(0..<image.count) == (try image.allBytes()))
    }

    @Test func bluetoothOffShowsAPauseAndTheResume() {
        // The events of a run that lost the link, fed to the screen one by one.
        var screen = UpdateScreen()
        let progress = { (sent: Int) in
            UpdateEvent.progress(
                UpdateProgress(
                    totalBytes: 100, bytesSent: sent, position: sent, bytesAcknowledged: sent, currentRate: 0, averageRate: 0, elapsed: .zero,
                    estimatedTimeRemaining: nil), at: .zero)
        }
        screen.apply(.state(.connecting, detail: nil, at: .zero))
        #expect(screen.keepAppOpen)
        #expect(screen.message == UpdateScreen.guidance)
        screen.apply(.state(.transferring, detail: nil, at: .zero))
        screen.apply(progress(40))
        screen.apply(.state(.paused, detail: "Bluetooth is off", at: .zero))
        #expect(screen.phase == .paused)
        #expect(screen.progress == 0.4)
        #expect(screen.keepAppOpen)
        #expect(screen.message.contains("continues where it stopped"))
        screen.apply(.state(.connecting, detail: nil, at: .zero))
        #expect(screen.phase == .paused, "still paused while reconnecting")
        screen.apply(.state(.transferring, detail: nil, at: .zero))
        screen.apply(progress(30))
        #expect(screen.progress == 0.4, "progress never goes back")
        #expect(screen.resumes == 1)
        screen.apply(.state(.verifying, detail: nil, at: .zero))
        screen.apply(.state(.completed, detail: nil, at: .zero))
        #expect(screen.phase == .completed)
        #expect(!screen.keepAppOpen)
    }

    @MainActor
    @Test func aRealPowerCycleEndsCompletedAfterAPause() async throws {
        let (model, device, image) = try await run(bluetoothOff: true)
        #expect(model.screen.phase == .completed)
        #expect(model.screen.resumes >= 1)
        #expect(device.flash.read(0..<image.count) == (try image.allBytes()))
    }
}
#endif
