import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

/// The device model writes each upload request's data to the simulator's flash (the profile's
/// ``FlashTiming``) before it answers, while the link keeps delivering the next requests: one
/// request in flight pays transfer, flash write and answer in series; a pipelined window hides
/// the write behind the next requests' transfer. All times are the simulation's virtual time.
@Suite struct MCUmgrFlashTimingTests {
    static let body = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 11) })
    static let bytes = MCUbootImageWriter.unsigned(body: body, version: .init(major: 3, minor: 0, revision: 0))

    /// The virtual time of an upload on the nRF52840 profile whose flash programs at `speed`
    /// bytes per second.
    static func upload(window: Int, speed: Double, erase: MCUmgrDeviceModel.Settings.EraseMode = .progressive) async throws -> Duration {
        var profile = DeviceProfile.nrf52840
        profile.flash.writeBytesPerSecond = speed
        var settings = MCUmgrDeviceModel.Settings()
        settings.eraseMode = erase
        let model = MCUmgrDeviceModel(settings: settings)
        let harness = UpdateHarness(profile: profile, model: model)
        var configuration = MCUmgrConfiguration()
        configuration.mode = .upload
        configuration.window = window
        let image = try FirmwareImage(bytes: bytes, name: "flash-timing")
        let outcome = try await harness.update(image, using: MCUmgrClient(configuration: configuration))
        _ = try outcome.result.get()
        #expect(harness.flashContents(image.count) == image.bytes)
        return outcome.virtualTime
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    @Test func oneRequestInFlightPaysEachFlashWriteAPipelinedWindowHidesIt() async throws {
        let profileSpeed = DeviceProfile.nrf52840.flash.writeBytesPerSecond
        let writeTime = Double(Self.bytes.count) / profileSpeed  // every byte programmed once
        let instant = 1e12
        let serial = Self.seconds(try await Self.upload(window: 1, speed: profileSpeed)) - Self.seconds(try await Self.upload(window: 1, speed: instant))
        let pipelined = Self.seconds(try await Self.upload(window: 8, speed: profileSpeed)) - Self.seconds(try await Self.upload(window: 8, speed: instant))
        // Window 1 waits for each write (the answer then waits for a connection event, so a
        // part of the write time hides in that wait); the window overlaps nearly all of it.
        #expect(serial >= 0.5 * writeTime, "window 1 paid \(serial) s of \(writeTime) s of flash writes")
        #expect(pipelined <= 0.1 * writeTime, "the pipelined window paid \(pipelined) s of \(writeTime) s of flash writes")
        // A flash as slow as the link (41 µs per 32-bit word, the nRF52840's worst case) costs
        // window 1 more again.
        let slow = Self.seconds(try await Self.upload(window: 1, speed: 4 / 41e-6)) - Self.seconds(try await Self.upload(window: 1, speed: profileSpeed))
        #expect(slow > 0.5 * (Double(Self.bytes.count) / (4 / 41e-6) - writeTime))
    }

    @Test func erasingTheImageFirstDelaysTheFirstAnswerByTheWholeErase() async throws {
        let sectors = (Self.bytes.count + 4095) / 4096
        let eraseTime = Self.seconds(DeviceProfile.nrf52840.flash.sectorEraseTime * sectors)
        let progressive = Self.seconds(try await Self.upload(window: 8, speed: DeviceProfile.nrf52840.flash.writeBytesPerSecond))
        let first = Self.seconds(try await Self.upload(window: 8, speed: DeviceProfile.nrf52840.flash.writeBytesPerSecond, erase: .wholeImageFirst))
        // Progressively the erases overlap the transfer; erased up front nothing overlaps them.
        #expect(first - progressive >= 0.5 * eraseTime, "erasing first cost \(first - progressive) s more, the erase takes \(eraseTime) s")
    }

    @Test func theEraseParameterSelectsTheSimulatedDevicesEraseMode() throws {
        #expect(try MCUmgrConfiguration(parameters: [:]).deviceSettings.eraseMode == .progressive)
        #expect(try MCUmgrConfiguration(parameters: ["erase": "first"]).deviceSettings.eraseMode == .wholeImageFirst)
        #expect(throws: OTAError.self) { try MCUmgrConfiguration(parameters: ["erase": "later"]) }
        do {
            _ = try MCUmgrConfiguration(parameters: ["erase": "later"])
        } catch {
            #expect(error.message == "parameter 'erase': 'later' is not progressive or first")
        }
    }
}
