// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATransportCoreBluetooth
import OTATransportSimulator
import Synchronization
import Testing

/// After a buttonless jump, the CoreBluetooth transport finds the bootloader of the device it
/// updates by the name the update set, and no other bootloader in range (IOS-DFU-Library #117):
/// iOS shows no addresses, and a bootloader at the next address is a new peripheral.
@Suite struct CoreBluetoothJumpTests {
    /// What stands next to the device being updated.
    enum Neighbour: CaseIterable {
        /// Held in its bootloader, advertising `DfuTarg` at its own address + 1.
        case dfuTarg
        /// A bootloader told a random name by an earlier update.
        case namedByAnotherUpdate
        /// An application with buttonless DFU, advertising its own name (the one ours has).
        case application
    }

    /// The device to update and a neighbour of the same kind, each a peripheral of `world`.
    struct Scene {
        let world: StandInWorld
        let device: SimulatedDevice
        let model: NordicApplicationModel
        let peripheral: StandInPeripheral
        let neighbour: SimulatedDevice
        let neighbourModel: NordicApplicationModel

        init(seed: UInt64, neighbour kind: Neighbour, bootloaderKeepsAddress: Bool, neighbourName: String? = nil) {
            var random = SeededRandom(seed: seed &* 7919 &+ 5)
            let low = UInt8(truncatingIfNeeded: random.next()) % 0xF0
            let prefix = "C0:FF:EE:\(Hex.digits(UInt8(truncatingIfNeeded: random.next()), digits: 2)):00"
            world = StandInWorld(seed: seed)
            model = NordicApplicationModel(applicationName: "Tracker", bootloaderKeepsAddress: bootloaderKeepsAddress)
            device = SimulatedDevice(profile: .nrf52840, model: model, simulation: world.simulation, address: "\(prefix):\(Hex.digits(low, digits: 2))")
            neighbourModel = NordicApplicationModel(applicationName: "Tracker")
            switch kind {
            case .dfuTarg: neighbourModel.holdInBootloader(advertisingName: neighbourName ?? "DfuTarg")
            case .namedByAnotherUpdate:
                neighbourModel.holdInBootloader(advertisingName: neighbourName ?? ButtonlessEntryStateMachine.advertisingName(random: random.next()))
            case .application: break
            }
            neighbour = SimulatedDevice(
                profile: .nrf52840, model: neighbourModel, simulation: world.simulation, address: "\(prefix):\(Hex.digits(low &+ 0x08, digits: 2))")
            // The neighbour first, so that a scan hears it before this device.
            world.addPeripheral(neighbour, name: "Tracker")
            peripheral = world.addPeripheral(device, name: "Tracker")
        }

        func makeCentral() -> CoreBluetoothCentral {
            let clock = world.clock
            return world.withCurrent { CoreBluetoothCentral(clock: clock) }
        }

        /// Updates the device through a fresh central, the engine seeded with `seed`.
        func update(_ image: FirmwareImage, seed: UInt64, meanwhile: (@Sendable () async -> Void)? = nil) async throws -> CoreBluetoothHarness.Outcome {
            var configuration = UpdateConfiguration()
            configuration.randomSeed = seed
            let engine = UpdateEngine(configuration: configuration, clock: world.clock)
            let connector = makeCentral().connector(for: peripheral.identifier)
            let world = self.world
            return try await world.run {
                let (stream, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
                async let collected: [UpdateEvent] = {
                    var events: [UpdateEvent] = []
                    for await event in stream { events.append(event) }
                    return events
                }()
                async let side: Void = { await meanwhile?() }()
                let result: Result<UpdateReport, OTAError>
                do throws(OTAError) {
                    result = .success(try await engine.update(image, using: NordicDFUClient(), connector: connector, events: sink))
                } catch {
                    result = .failure(error)
                }
                await side
                return CoreBluetoothHarness.Outcome(result: result, events: await collected, virtualTime: world.simulation.now)
            }
        }

        /// The neighbour was never connected to and its flash never touched.
        func neighbourUntouched(_ before: Data, _ comment: Comment) {
            #expect(neighbour.dataWritesArrived == 0, comment)
            #expect(neighbour.flash.bytesWritten == 0, comment)
            #expect(neighbour.flash.snapshot() == before, comment)
            #expect(neighbourModel.bootloader.installedImage == nil, comment)
            #expect(world.peripherals(of: neighbour).allSatisfy { $0.linksOpened == 0 }, comment)
        }
    }

    private func image(size: Int = 6_000) throws -> FirmwareImage {
        try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try CoreBluetoothHarness.image(size: size, seed: 3))
    }

    @Test func hundredSeededButtonlessUpdatesEachUpdateTheIntendedDeviceOnly() async throws {
        let image = try image()
        var names: Set<String> = []
        for seed in UInt64(0)..<100 {
            let kind = Neighbour.allCases[Int(seed) % Neighbour.allCases.count]
            let keepsAddress = seed % 3 == 0
            let scene = Scene(seed: seed, neighbour: kind, bootloaderKeepsAddress: keepsAddress)
            let before = scene.neighbour.flash.snapshot()
            let comment: Comment = "seed \(seed), \(kind)\(keepsAddress ? ", bootloader keeps its address" : "")"
            let outcome = try await scene.update(image, seed: seed)
            let report = try outcome.result.get()
            #expect(report.imageSize == image.count, comment)
            #expect(scene.model.bootloader.installedImage?.sha256 == [UInt8](image.sha256), comment)
            scene.neighbourUntouched(before, comment)
            // Looked for by name alone (no addresses on CoreBluetooth), and found where it went:
            // a new identifier at the next address, the same one when it kept its address.
            let looking = try #require(outcome.notes.first { $0.hasPrefix("looking for the device") }, comment)
            #expect(looking.hasPrefix("looking for the device advertising as Dfu"), comment)
            if let name = looking.split(separator: " ").last { names.insert(String(name)) }
            let ours = scene.world.peripherals(of: scene.device)
            if keepsAddress {
                #expect(ours.count == 1, comment)
                #expect(!outcome.notes.contains { $0.hasPrefix("found the device again") }, comment)
            } else {
                #expect(ours.count == 2, comment)
                #expect(outcome.notes.contains("found the device again at \(ours[1].identifier.uuidString)"), comment)
                #expect(ours[1].linksOpened == 1, comment)
            }
        }
        #expect(names.count >= 99)
    }

    /// The rival advertises from the start, or only 300 ms after this device's bootloader came
    /// up (the scan goes on listening after the first match).
    @Test(arguments: [Duration.zero, .milliseconds(300)])
    func aNeighbourAdvertisingTheSameNameIsRefusedNotGuessed(rivalDelay: Duration) async throws {
        let image = try image(size: 2_000)
        // The name seed 21 makes this update choose, learnt from the same update without a rival.
        let probe = Scene(seed: 21, neighbour: .dfuTarg, bootloaderKeepsAddress: false)
        _ = try await probe.update(image, seed: 21).result.get()
        let chosen = probe.model.advertisedName
        #expect(chosen.hasPrefix("Dfu") && chosen != "DfuTarg")

        let scene = Scene(seed: 21, neighbour: .namedByAnotherUpdate, bootloaderKeepsAddress: false, neighbourName: chosen)
        let before = scene.neighbour.flash.snapshot()
        let (model, neighbour, world) = (scene.model, scene.neighbour, scene.world)
        if rivalDelay > .zero { neighbour.isReachable = false }
        let outcome = try await scene.update(image, seed: 21) {
            guard rivalDelay > .zero else { return }
            while !model.isInBootloader { try? await world.clock.sleep(for: .milliseconds(5)) }
            try? await world.clock.sleep(for: rivalDelay)
            neighbour.isReachable = true
        }
        let error = try #require(outcome.result.failure)
        #expect(error.code == .connectionFailed)
        #expect(!error.message.contains("\n"))
        #expect(error.message.hasPrefix("2 devices match advertising as \(chosen) ("))
        #expect(error.message.contains("refusing to guess"))
        scene.neighbourUntouched(before, "a rival of the same name")
        // Neither was taken: our bootloader got nothing either.
        #expect(scene.model.isInBootloader)
        #expect(scene.model.bootloader.installedImage == nil)
        #expect(scene.world.peripherals(of: scene.device).dropFirst().allSatisfy { $0.linksOpened == 0 })
    }

    @Test func whenTheBootloaderNeverAppearsTheUpdateFailsInOneLineWithinTheTimeout() async throws {
        let scene = Scene(seed: 4, neighbour: .dfuTarg, bootloaderKeepsAddress: false)
        let before = scene.neighbour.flash.snapshot()
        let (device, model, world) = (scene.device, scene.model, scene.world)
        // The device goes out of range as it restarts into its bootloader.
        let jumpedAt = Mutex<Duration?>(nil)
        let outcome = try await scene.update(try image(size: 2_000), seed: 4) {
            while !model.isInBootloader { try? await world.clock.sleep(for: .milliseconds(5)) }
            device.isReachable = false
            jumpedAt.withLock { $0 = world.simulation.now }
        }
        let error = try #require(outcome.result.failure)
        #expect(error.code == .connectionFailed)
        #expect(!error.message.contains("\n"))
        #expect(error.message.hasPrefix("the device did not come back advertising as Dfu"))
        #expect(error.message.contains("within 10.0 s"))
        // Every candidate heard, by identifier and name: the application before it jumped, the
        // neighbour's DfuTarg.
        let neighbourBootloader = try #require(world.peripherals(of: scene.neighbour).last)
        #expect(error.message.contains("\(neighbourBootloader.identifier.uuidString) 'DfuTarg'"))
        scene.neighbourUntouched(before, "nothing came back")
        // Within the engine's reappearance timeout of the jump, on the virtual clock.
        let jumped = try #require(jumpedAt.withLock { $0 })
        #expect(outcome.virtualTime - jumped <= UpdateConfiguration().reappearanceTimeout + .seconds(1))
    }

    @Test func theScanEndsAtTheWindowAndNamesEveryPeripheralHeard() async throws {
        let scene = Scene(seed: 9, neighbour: .dfuTarg, bootloaderKeepsAddress: false)
        let central = scene.makeCentral()
        let connector = central.connector(for: scene.peripheral.identifier)
        let world = scene.world
        let (error, elapsed) = try await world.run { () async -> (OTAError?, Duration) in
            let start = world.simulation.now
            do throws(OTAError) {
                _ = try await connector.reappeared(matching: ReappearanceRule(addresses: [], name: "Dfu12345"), within: .seconds(3))
                return (nil, world.simulation.now - start)
            } catch {
                return (error, world.simulation.now - start)
            }
        }
        let failure = try #require(error)
        let neighbourBootloader = try #require(world.peripherals(of: scene.neighbour).last)
        #expect(
            failure.message
                == "the device did not come back advertising as Dfu12345 within 3.0 s (heard only \(neighbourBootloader.identifier.uuidString) 'DfuTarg', \(scene.peripheral.identifier.uuidString) 'Tracker'); is it in range? Power-cycle it and run the command again"
        )
        #expect(elapsed <= .seconds(3))
        #expect(elapsed >= .seconds(2))
    }

    @Test func aRuleWithOnlyAddressesIsRefusedAtOnce() async throws {
        let scene = Scene(seed: 2, neighbour: .dfuTarg, bootloaderKeepsAddress: false)
        let connector = scene.makeCentral().connector(for: scene.peripheral.identifier)
        let world = scene.world
        let (error, elapsed) = try await world.run { () async -> (OTAError?, Duration) in
            let start = world.simulation.now
            do throws(OTAError) {
                _ = try await connector.reappeared(
                    matching: ReappearanceRule(addresses: ["C0:FF:EE:00:00:10", "C0:FF:EE:00:00:11"], name: nil), within: .seconds(10))
                return (nil, world.simulation.now - start)
            } catch {
                return (error, world.simulation.now - start)
            }
        }
        let failure = try #require(error)
        #expect(failure.code == .connectionFailed)
        #expect(
            failure.message
                == "cannot find \(scene.peripheral.identifier.uuidString) again: it comes back at C0:FF:EE:00:00:10 or C0:FF:EE:00:00:11 under no name set for this update, and CoreBluetooth shows no addresses; start its bootloader by hand (a button held at reset) and update the peripheral it then advertises, with no other like it in range"
        )
        #expect(elapsed == .zero)
    }

    @Test func aBootloaderThatKeepsItsAddressIsTheSamePeripheralFoundByItsNewName() async throws {
        // Same address, same identifier: heard first as the application, then as its bootloader.
        let scene = Scene(seed: 3, neighbour: .application, bootloaderKeepsAddress: true)
        let central = scene.makeCentral()
        let (world, model, identifier) = (scene.world, scene.model, scene.peripheral.identifier.uuidString)
        let scanner = central.scanner(services: nil)
        let connector = central.connector(for: scene.peripheral.identifier)
        let (first, found) = try await world.run { () async throws -> (String?, String) in
            var first: String?
            for try await device in try await scanner.discoveries() where device.address == identifier {
                first = device.advertisement.name
                break
            }
            model.holdInBootloader(advertisingName: "DfuC0DE5")
            let found = try await connector.reappeared(matching: ReappearanceRule(addresses: [], name: "DfuC0DE5"), within: .seconds(2))
            return (first, found.deviceDescription)
        }
        #expect(first == "Tracker")
        #expect(found == identifier)
        #expect(world.peripherals(of: scene.device).count == 1)
    }
}

/// A multi-part package through CoreBluetooth: the SoftDevice and bootloader part jumps, the
/// bootloader comes back under a new identifier and stays in DFU mode; the application part must
/// go there through the session's connector, not to the application's identifier.
@Suite struct CoreBluetoothMultiPartTests {
    /// An unsigned SoftDevice+bootloader image: `sd_size` + `bl_size` bytes, the init packet as
    /// nrfutil writes one (type SOFTDEVICE_BOOTLOADER, fields 5 and 6), needing SoftDevice 0x0100.
    static func softDeviceAndBootloader(softDevice: Int = 4096, bootloader: Int = 2048) throws -> FirmwareImage {
        var random = SeededRandom(seed: 17)
        let bytes = Data((0..<(softDevice + bootloader)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        func varint(_ value: UInt64) -> Data {
            var (value, out) = (value, Data())
            repeat {
                out.append(UInt8(value & 0x7F) | (value >> 7 != 0 ? 0x80 : 0))
                value >>= 7
            } while value != 0
            return out
        }
        func field(_ number: UInt64, _ value: UInt64) -> Data { varint(number << 3) + varint(value) }
        func bytesField(_ number: UInt64, _ payload: Data) -> Data { varint(number << 3 | 2) + varint(UInt64(payload.count)) + payload }
        var command = field(1, 2) + field(2, 52) + bytesField(3, varint(0x0100)) + field(4, 3)
        command += field(5, UInt64(softDevice)) + field(6, UInt64(bootloader))
        command += bytesField(8, field(1, 3) + bytesField(2, Data(SHA256.hash(bytes).reversed())))
        let packet = bytesField(1, field(1, 1) + bytesField(2, command))
        return try FirmwareImage(bytes: bytes, name: "sd_bl.bin", attachments: [NordicDFUClient.initPacketKey: packet])
    }

    /// Sends both parts through `connector`, the device restarting between them.
    private func send(
        _ parts: [FirmwareImage], scene: CoreBluetoothJumpTests.Scene, connector: any Connector, session: DirectTransportSession
    ) async throws -> [Result<UpdateReport, OTAError>] {
        var configuration = UpdateConfiguration()
        configuration.randomSeed = 8
        configuration.resume.maximumAttempts = 1
        let engine = UpdateEngine(configuration: configuration, clock: scene.world.clock)
        return try await scene.world.run {
            var results: [Result<UpdateReport, OTAError>] = []
            for part in parts {
                do throws(OTAError) {
                    results.append(.success(try await engine.update(part, using: NordicDFUClient(), connector: connector)))
                    try await session.waitForRestart()
                } catch {
                    results.append(.failure(error))
                    break
                }
            }
            return results
        }
    }

    @Test func theApplicationPartGoesToTheBootloaderUnderItsNewIdentifier() async throws {
        let scene = CoreBluetoothJumpTests.Scene(seed: 8, neighbour: .dfuTarg, bootloaderKeepsAddress: false)
        let before = scene.neighbour.flash.snapshot()
        let parts = [
            try Self.softDeviceAndBootloader(), try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try CoreBluetoothHarness.image(size: 3_000)),
        ]
        let session = DirectTransportSession(
            connector: scene.makeCentral().connector(for: scene.peripheral.identifier), clock: scene.world.clock, restartDelay: .seconds(1))
        let results = try await send(parts, scene: scene, connector: session.connector, session: session)
        #expect(results.count == 2)
        for result in results { _ = try result.get() }
        #expect(scene.model.bootloader.installedImage?.firmwareType == .application)
        #expect(scene.model.bootloader.installedImage?.sha256 == [UInt8](parts[1].sha256))
        let ours = scene.world.peripherals(of: scene.device)
        #expect(ours.count == 2)
        // The application's identifier was connected once (the jump); both parts' transfers went
        // to the bootloader's.
        #expect(ours[0].linksOpened == 1)
        #expect(ours[1].linksOpened == 2)
        scene.neighbourUntouched(before, "multi-part")
    }

    @Test func fromTheApplicationsIdentifierTheApplicationPartFindsNothing() async throws {
        let scene = CoreBluetoothJumpTests.Scene(seed: 8, neighbour: .dfuTarg, bootloaderKeepsAddress: false)
        let parts = [
            try Self.softDeviceAndBootloader(), try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try CoreBluetoothHarness.image(size: 3_000)),
        ]
        let connector = scene.makeCentral().connector(for: scene.peripheral.identifier)
        let session = DirectTransportSession(connector: connector, clock: scene.world.clock, restartDelay: .seconds(1))
        // The bare connector, as sessions handed it out before they followed the device.
        let results = try await send(parts, scene: scene, connector: connector, session: session)
        #expect(results.count == 2)
        _ = try results[0].get()
        let error = try #require(results.last?.failure)
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains("did not answer"))
        #expect(scene.model.bootloader.installedImage?.firmwareType == .softdeviceBootloader)
        #expect(scene.model.isInBootloader)
    }
}

extension Result {
    /// The error, `nil` on success.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
#endif
