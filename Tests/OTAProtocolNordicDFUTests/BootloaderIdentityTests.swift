import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
import Testing

@testable import OTAProtocolNordicDFU

/// After a buttonless jump the client reconnects to the bootloader of the device it updates, and
/// to no other bootloader in range (IOS-DFU-Library #117: a neighbour's `DfuTarg` got updated).
@Suite struct BootloaderIdentityTests {
    /// What stands next to the device being updated.
    enum Neighbour: CaseIterable {
        /// Held in its bootloader, advertising `DfuTarg` at its own address + 1.
        case dfuTarg
        /// A bootloader that keeps its address, at the very address this device's bootloader
        /// takes (+ 1), advertising `DfuTarg`: the address rule alone would take it.
        case dfuTargAtOurBootloaderAddress
        /// A bootloader told a random name by an earlier update, at its own address + 1.
        case namedByAnotherUpdate
        /// An application with buttonless DFU, at this device's bootloader address.
        case applicationAtOurBootloaderAddress
    }

    /// Two devices of the same kind, addresses from the seed; the neighbour is put as `neighbour`
    /// says. Returns the harness of the device to update and the neighbour.
    static func scene(seed: UInt64, neighbour kind: Neighbour, bootloaderKeepsAddress: Bool) -> (UpdateHarness, SimulatedDevice, NordicApplicationModel) {
        var random = SeededRandom(seed: seed &* 7919 &+ 3)
        // Low byte below 0xF0, so that + 1 and + 2 stay distinct addresses.
        let low = UInt8(truncatingIfNeeded: random.next()) % 0xF0
        let prefix =
            "C0:FF:EE:\(Hex.digits(UInt8(truncatingIfNeeded: random.next()), digits: 2)):\(Hex.digits(UInt8(truncatingIfNeeded: random.next()), digits: 2))"
        let ours = "\(prefix):\(Hex.digits(low, digits: 2))"
        let model = NordicApplicationModel(applicationName: "Tracker", bootloaderKeepsAddress: bootloaderKeepsAddress)
        var harness = UpdateHarness(profile: .nrf52840, model: model, seed: seed, address: ours)
        harness.configuration.randomSeed = seed
        let neighbourModel: NordicApplicationModel
        let neighbourAddress: String
        switch kind {
        case .dfuTarg:
            neighbourModel = NordicApplicationModel(applicationName: "Tracker")
            neighbourAddress = "\(prefix):\(Hex.digits(low &+ 0x08, digits: 2))"
            neighbourModel.holdInBootloader()
        case .dfuTargAtOurBootloaderAddress:
            neighbourModel = NordicApplicationModel(applicationName: "Tracker", bootloaderKeepsAddress: true)
            neighbourAddress = "\(prefix):\(Hex.digits(low &+ 1, digits: 2))"
            neighbourModel.holdInBootloader()
        case .namedByAnotherUpdate:
            neighbourModel = NordicApplicationModel(applicationName: "Tracker")
            neighbourAddress = "\(prefix):\(Hex.digits(low &+ 0x10, digits: 2))"
            neighbourModel.holdInBootloader(advertisingName: ButtonlessEntryStateMachine.advertisingName(random: random.next()))
        case .applicationAtOurBootloaderAddress:
            neighbourModel = NordicApplicationModel(applicationName: "Tracker")
            neighbourAddress = "\(prefix):\(Hex.digits(low &+ 1, digits: 2))"
        }
        let neighbour = SimulatedDevice(profile: .nrf52840, model: neighbourModel, simulation: harness.simulation, address: neighbourAddress, name: "Tracker")
        return (harness, neighbour, neighbourModel)
    }

    @Test func hundredSeededButtonlessUpdatesEachUpdateTheIntendedDeviceOnly() async throws {
        let image = try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try UpdateHarness.image(size: 6_000))
        var names: Set<String> = []
        for seed in UInt64(0)..<100 {
            let kind = Neighbour.allCases[Int(seed) % Neighbour.allCases.count]
            let (harness, neighbour, neighbourModel) = Self.scene(seed: seed, neighbour: kind, bootloaderKeepsAddress: seed % 3 == 0)
            let before = neighbour.flash.snapshot()
            let outcome = try await harness.update(image, using: NordicDFUClient())
            let report = try outcome.result.get()
            #expect(report.imageSize == image.count, "seed \(seed)")
            let ours = try #require(harness.device.model as? NordicApplicationModel)
            #expect(ours.bootloader.installedImage?.sha256 == SHA256.hash(image.bytes), "seed \(seed), \(kind)")
            // The other device was never connected to, and its flash never touched.
            #expect(neighbour.dataWritesArrived == 0, "seed \(seed), \(kind)")
            #expect(neighbour.flash.bytesWritten == 0, "seed \(seed), \(kind)")
            #expect(neighbour.flash.snapshot() == before, "seed \(seed), \(kind)")
            #expect(neighbourModel.bootloader.installedImage == nil, "seed \(seed), \(kind)")
            let found = try #require(outcome.notes.first { $0.hasPrefix("looking for the device") }, "seed \(seed)")
            #expect(found.contains("advertising as Dfu"), "seed \(seed)")
            if let name = found.split(separator: " ").last { names.insert(String(name)) }
        }
        // A name per update: two devices updated at once never bring up bootloaders of one name.
        #expect(names.count >= 99)
    }

    @Test func theSameSeedPicksTheSameNameAndAnotherSeedAnother() async throws {
        let image = try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try UpdateHarness.image(size: 2_000))
        func name(seed: UInt64) async throws -> String {
            let (harness, _, _) = Self.scene(seed: seed, neighbour: .dfuTarg, bootloaderKeepsAddress: false)
            let outcome = try await harness.update(image, using: NordicDFUClient())
            _ = try outcome.result.get()
            let ours = try #require(harness.device.model as? NordicApplicationModel)
            return ours.advertisedName
        }
        let first = try await name(seed: 5)
        #expect(first.count == 8 && first.hasPrefix("Dfu"))
        #expect(try await name(seed: 5) == first)
        #expect(try await name(seed: 6) != first)
    }

    @Test func whenOnlyAnotherBootloaderAppearsTheUpdateFailsNamingTheRuleAndWhatWasHeard() async throws {
        // The device's bootloader never comes up (out of range once restarted); a neighbour's
        // DfuTarg does. It must not be taken.
        let (harness, neighbour, neighbourModel) = Self.scene(seed: 11, neighbour: .dfuTargAtOurBootloaderAddress, bootloaderKeepsAddress: false)
        let image = try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try UpdateHarness.image(size: 2_000))
        let device = harness.device
        let model = try #require(device.model as? NordicApplicationModel)
        @Sendable func silenceOnceRestarted() {
            guard !model.isInBootloader else { return device.isReachable = false }
            harness.simulation.schedule(at: harness.simulation.now + .milliseconds(5)) { silenceOnceRestarted() }
        }
        silenceOnceRestarted()
        let outcome = try await harness.update(image, using: NordicDFUClient())
        let error = try outcome.failure()
        #expect(error.code == .connectionFailed)
        #expect(!error.message.contains("\n"))
        #expect(error.message.contains("did not come back at \(device.address) or \(BootloaderAddress.next(after: device.address)!), advertising as Dfu"))
        #expect(error.message.contains("heard only \(neighbour.address) 'DfuTarg'"))
        #expect(neighbour.dataWritesArrived == 0)
        #expect(neighbourModel.bootloader.installedImage == nil)
    }

    @Test func anSDK12ApplicationThatCannotSetANameIsFoundByItsAddressAlone() async throws {
        let model = NordicApplicationModel(applicationName: "Old", setsAdvertisingName: false)
        let harness = UpdateHarness(profile: .nrf52840, model: model, address: "C0:FF:EE:00:00:20")
        // A neighbour in its bootloader, away from this device's addresses.
        let other = NordicApplicationModel()
        other.holdInBootloader()
        let neighbour = SimulatedDevice(profile: .nrf52840, model: other, simulation: harness.simulation, address: "C0:FF:EE:00:00:40")
        let image = try NordicDFUProtocol.descriptor.rawImagePreparation!.prepare(try UpdateHarness.image(size: 2_000))
        let outcome = try await harness.update(image, using: NordicDFUClient())
        _ = try outcome.result.get()
        #expect(outcome.notes.contains { $0.contains("cannot be told a name") })
        #expect(outcome.notes.contains("looking for the device at C0:FF:EE:00:00:20 or C0:FF:EE:00:00:21"))
        #expect(outcome.notes.contains { $0.hasPrefix("found the device again at C0:FF:EE:00:00:21") })
        #expect(model.bootloader.installedImage?.sha256 == SHA256.hash(image.bytes))
        #expect(neighbour.dataWritesArrived == 0)
    }

    @Test func theRuleIsTheDeviceAddressOrTheNextAndTheNameSet() throws {
        let rule = try #require(BootloaderAddress.reappearance(of: "c0:ff:ee:00:00:10", advertisedName: "DfuA3F09"))
        #expect(rule.addresses == ["C0:FF:EE:00:00:10", "C0:FF:EE:00:00:11"])
        #expect(rule.name == "DfuA3F09")
        // A transport that does not see addresses finds it by the name alone.
        #expect(BootloaderAddress.reappearance(of: nil, advertisedName: "DfuA3F09") == ReappearanceRule(addresses: [], name: "DfuA3F09"))
        // The simulator's names have no next address.
        #expect(BootloaderAddress.reappearance(of: "sim:nrf", advertisedName: nil)?.addresses == ["SIM:NRF"])
        #expect(BootloaderAddress.reappearance(of: nil, advertisedName: nil) == nil)
    }
}

@Suite struct ButtonlessEntryStateMachineTests {
    @Test func theNameIsDfuAndFiveHexadecimalDigits() {
        #expect(ButtonlessEntryStateMachine.advertisingName(random: 0x1234_5678_9ABC_DEF0) == "DfuCDEF0")
        #expect(ButtonlessEntryStateMachine.advertisingName(random: 0) == "Dfu00000")
    }

    @Test func anApplicationWithoutSetNameStillRestartsWithoutAName() {
        var machine = ButtonlessEntryStateMachine(advertisingName: "Dfu00001")
        #expect(machine.start() == .send(.setAdvertisingName("Dfu00001")))
        #expect(machine.received(Data([0x20, 0x02, 0x02])) == .send(.enterBootloader))
        #expect(machine.received(Data([0x20, 0x01, 0x01])) == .restarting(advertisedName: nil))
    }

    @Test func aNameSetIsTheNameExpected() {
        var machine = ButtonlessEntryStateMachine(advertisingName: "Dfu00001")
        _ = machine.start()
        #expect(machine.received(Data([0x20, 0x02, 0x01])) == .send(.enterBootloader))
        #expect(machine.received(Data([0x20, 0x01, 0x01])) == .restarting(advertisedName: "Dfu00001"))
    }

    @Test func otherRefusalsOfSetNameFail() {
        var machine = ButtonlessEntryStateMachine(advertisingName: "Dfu00001")
        _ = machine.start()
        guard case .fail(let error) = machine.received(Data([0x20, 0x02, 0x05])) else {
            Issue.record("an invalid name must fail")
            return
        }
        #expect(error.message.contains("invalid advertising name"))
    }
}
