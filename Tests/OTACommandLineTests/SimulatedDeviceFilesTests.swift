import Foundation
import OTACore
import OTATransportSimulator
import Testing

@testable import OTACommandLine

/// A campaign's simulated device kept as it goes (decision 0041): the journal replays what was
/// kept, a kill in the middle of an append loads as the previous keep, and a kill between the
/// steps of a save loses nothing.
@Suite struct SimulatedDeviceFilesTests {
    static func device(_ simulation: Simulation) throws -> SimulatedDevice {
        let model = try BuiltInProtocols.registry.descriptor(named: "generic").makeDeviceModel(ProtocolParameters())
        return SimulatedDevice(profile: DeviceProfile.nrf52840, model: model, simulation: simulation)
    }

    static func files() -> SimulatedDeviceFiles {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-device-files-\(UUID().uuidString)")
        return SimulatedDeviceFiles(
            flash: directory.appendingPathComponent("d.flash"), state: directory.appendingPathComponent("d.state"), code: .storage)
    }

    /// Programs `byte` over sector `sector`.
    static func program(_ device: SimulatedDevice, sector: Int, byte: UInt8) throws {
        let size = device.flash.sectorSize
        try device.flash.erase((sector * size)..<((sector + 1) * size))
        try device.flash.write(Data(repeating: byte, count: size), at: sector * size)
    }

    @Test("the flash file keeps only the written sectors, restores the slot exactly, and still reads the whole-slot files of before")
    func compactFlashFile() throws {
        let simulation = Simulation(seed: 1)
        let files = Self.files()
        defer { try? FileManager.default.removeItem(at: files.flash.deletingLastPathComponent()) }
        let device = try Self.device(simulation)
        try Self.program(device, sector: 0, byte: 0x11)
        try Self.program(device, sector: 7, byte: 0x77)
        try Self.program(device, sector: 9, byte: 0xFF)  // programmed with nothing: as erased
        let size = device.flash.sectorSize
        try device.flash.write(Data([0x12, 0x34]), at: 255 * size + 10)  // the slot's last sector, in part
        let slot = device.flash.snapshot()
        try files.save(device)
        let file = try Data(contentsOf: files.flash)
        // Three sectors and their framing, not the 1 MB slot.
        #expect(file.count == 12 + 3 * (9 + size), "\(file.count) bytes")
        let restored = try Self.device(simulation)
        try files.restore(restored)
        #expect(restored.flash.snapshot() == slot)

        // A file as `ota` wrote it before (the whole slot) loads as it is.
        try slot.write(to: files.flash, options: .atomic)
        let fromWholeSlot = try Self.device(simulation)
        try files.restore(fromWholeSlot)
        #expect(fromWholeSlot.flash.snapshot() == slot)
    }

    @Test(
        "a damaged, torn or foreign flash file is one error naming it, never a wrong device",
        arguments: ["flipped", "torn", "another size", "a sector past the slot", "a state entry"])
    func damagedFlashFile(damage: String) throws {
        let simulation = Simulation(seed: 1)
        let files = Self.files()
        defer { try? FileManager.default.removeItem(at: files.flash.deletingLastPathComponent()) }
        let device = try Self.device(simulation)
        try Self.program(device, sector: 2, byte: 0x22)
        try files.save(device)
        var file = try Data(contentsOf: files.flash)
        let size = device.flash.sectorSize
        switch damage {
        case "flipped": file[file.count - 100] ^= 0x01
        case "torn": file = file.prefix(file.count - 1)
        case "another size": file = Data(repeating: 0xFF, count: device.flash.capacity / 2)
        case "a sector past the slot":
            file = SimulatedDeviceJournal.group([.init(kind: .sector, index: device.flash.capacity / size, bytes: Data(repeating: 0, count: size))])
        default: file = SimulatedDeviceJournal.group([.init(kind: .state, bytes: Data([1]))])
        }
        try file.write(to: files.flash, options: .atomic)
        let restored = try Self.device(simulation)
        #expect {
            try files.restore(restored)
        } throws: { error in
            let message = "\(error)"
            return message.contains(files.flash.path) && message.contains("delete it") && !message.contains("\n")
        }
    }

    @Test("what was kept is restored; a torn or damaged last group loads as the keep before it, never as a mix")
    func tornAppend() throws {
        let simulation = Simulation(seed: 1)
        let files = Self.files()
        defer { try? FileManager.default.removeItem(at: files.flash.deletingLastPathComponent()) }
        let device = try Self.device(simulation)
        try Self.program(device, sector: 0, byte: 0x11)
        try files.keep(device)
        let first = device.flash.snapshot()
        try Self.program(device, sector: 0, byte: 0x22)
        try Self.program(device, sector: 3, byte: 0x33)
        try files.keep(device)
        let second = device.flash.snapshot()
        let journal = try Data(contentsOf: files.journal)

        let whole = try Self.device(simulation)
        try files.restore(whole)
        #expect(whole.flash.snapshot() == second)
        #expect(!FileManager.default.fileExists(atPath: files.journal.path), "a replayed journal is folded into the files")

        for damage in ["torn", "flipped"] {
            try FileManager.default.removeItem(at: files.flash)
            var damaged = journal
            if damage == "torn" { damaged = damaged.prefix(damaged.count - 100) } else { damaged[damaged.count - 10] ^= 0x01 }
            try damaged.write(to: files.journal)
            let restored = try Self.device(simulation)
            try files.restore(restored)
            #expect(restored.flash.snapshot() == first, "\(damage)")
        }
    }

    @Test("a journal damaged before its end, or not a journal, is refused with the file named, not replayed in part")
    func damagedJournal() throws {
        let simulation = Simulation(seed: 1)
        let files = Self.files()
        defer { try? FileManager.default.removeItem(at: files.flash.deletingLastPathComponent()) }
        let device = try Self.device(simulation)
        try Self.program(device, sector: 0, byte: 0x11)
        try files.keep(device)
        let firstGroup = try Data(contentsOf: files.journal).count
        try Self.program(device, sector: 2, byte: 0x22)
        try files.keep(device)
        let journal = try Data(contentsOf: files.journal)
        var flipped = journal
        flipped[firstGroup - 10] ^= 0x01  // in the first group's payload, the second one whole after it
        for damaged in [flipped, Data("something else entirely".utf8) + journal] {
            try damaged.write(to: files.journal)
            let restored = try Self.device(simulation)
            #expect(throws: OTAError.self) { try files.restore(restored) }
            do {
                try files.restore(restored)
            } catch {
                #expect(error.message.contains(files.journal.path) && error.message.contains("delete it"), "\(error.message)")
            }
            #expect(FileManager.default.fileExists(atPath: files.journal.path), "a refused journal is left for the user to look at")
        }
        // Only a prefix of a group left: torn, the keep before it loads.
        try (journal + Data("SJG".utf8)).write(to: files.journal)
        let torn = try Self.device(simulation)
        try files.restore(torn)
        #expect(torn.flash.snapshot() == device.flash.snapshot())
    }

    @Test("a save killed after the flash file was replaced, before the journal was deleted, replays to the same device")
    func killedSave() throws {
        let simulation = Simulation(seed: 1)
        let files = Self.files()
        defer { try? FileManager.default.removeItem(at: files.flash.deletingLastPathComponent()) }
        let device = try Self.device(simulation)
        try Self.program(device, sector: 1, byte: 0x44)
        try files.keep(device)
        try Self.program(device, sector: 1, byte: 0x55)  // after the last keep: only the save has it
        try Self.program(device, sector: 2, byte: 0x66)
        let final = device.flash.snapshot()
        // The save's steps, stopped before the journal is deleted.
        try files.keep(device)
        try final.write(to: files.flash, options: .atomic)
        let restored = try Self.device(simulation)
        try files.restore(restored)
        #expect(restored.flash.snapshot() == final)
    }

    @Test("the device's count of received bytes is restored from its file")
    func receivedCount() throws {
        let simulation = Simulation(seed: 1)
        let files = Self.files()
        defer { try? FileManager.default.removeItem(at: files.flash.deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: files.flash.deletingLastPathComponent(), withIntermediateDirectories: true)
        let handle = try files.openReceived()
        try files.keepReceived(70_000, handle: handle)
        try handle.close()
        let device = try Self.device(simulation)
        try files.restore(device)
        #expect(device.dataBytesReceived == 70_000)
    }

    @Test("a received count that is not one (7 bytes, or past Int.max) is refused in one line, not a crash")
    func damagedReceivedCount() throws {
        let simulation = Simulation(seed: 1)
        let files = Self.files()
        defer { try? FileManager.default.removeItem(at: files.flash.deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: files.flash.deletingLastPathComponent(), withIntermediateDirectories: true)
        for bad in [Data(repeating: 0, count: 7), Data(repeating: 0xFF, count: 8)] {
            try bad.write(to: files.received)
            let device = try Self.device(simulation)
            do throws(OTAError) {
                try files.restore(device)
                Issue.record("a damaged count was restored")
            } catch {
                #expect(error.message.contains("not an 8-byte count") && error.message.contains("delete it"))
            }
        }
    }
}
