import Foundation
import OTACore
import OTATransportSimulator
import Testing

/// The bytes a simulated device is kept in (decisions 0041, 0048): groups read back as written,
/// a torn or damaged last group is what a kill leaves and loads as the keep before it, anything
/// else is refused, and replaying stays inside the device's flash.
@Suite struct SimulatedDeviceJournalTests {
    static let sector = Data(repeating: 0x5A, count: 16)
    static let first = [SimulatedDeviceJournal.Entry(kind: .sector, index: 2, bytes: sector)]
    static let second = [
        SimulatedDeviceJournal.Entry(kind: .sector, index: 0, bytes: Data(repeating: 0xA5, count: 16)),
        SimulatedDeviceJournal.Entry(kind: .state, bytes: Data("state".utf8)),
        SimulatedDeviceJournal.Entry(kind: .running, bytes: Data()),
    ]

    @Test("groups read back as written, in order")
    func roundTrip() throws {
        let journal = SimulatedDeviceJournal.group(Self.first) + SimulatedDeviceJournal.group(Self.second)
        #expect(try SimulatedDeviceJournal.groups(journal) == [Self.first, Self.second])
        #expect(try SimulatedDeviceJournal.groups(Data()) == [])
    }

    @Test("every prefix of a group appended (a kill inside the append) loads as the groups before it")
    func tornLastGroup() throws {
        let before = SimulatedDeviceJournal.group(Self.first)
        let appended = SimulatedDeviceJournal.group(Self.second)
        for cut in 0..<appended.count {
            #expect(try SimulatedDeviceJournal.groups(before + appended.prefix(cut)) == [Self.first], "cut at \(cut)")
        }
    }

    @Test("a damaged group is dropped when last and refused with more after it; bytes that start no group are refused")
    func damaged() throws {
        let first = SimulatedDeviceJournal.group(Self.first)
        var flipped = first
        flipped[flipped.count - 6] ^= 0x01
        #expect(try SimulatedDeviceJournal.groups(first + flipped) == [Self.first])
        #expect(throws: SimulatedDeviceJournalError.self) { try SimulatedDeviceJournal.groups(flipped + first) }
        #expect(throws: SimulatedDeviceJournalError.self) { try SimulatedDeviceJournal.groups(Data("not a journal".utf8) + first) }
        #expect(throws: SimulatedDeviceJournalError.self) { try SimulatedDeviceJournal.groups(first + Data("SJG2".utf8)) }
    }

    @Test("an entry of a kind no keep writes makes its group damaged, not a state to restore")
    func unknownKind() throws {
        var payload = ByteWriter()
        payload.u8(7)
        payload.u32(0)
        payload.u32(1)
        payload.u8(0xFF)
        var group = ByteWriter()
        group.bytes(Data("SJG1".utf8))
        group.u32(UInt32(payload.data.count))
        group.bytes(payload.data)
        group.u32(CRC32.checksum(payload.data))
        let first = SimulatedDeviceJournal.group(Self.first)
        #expect(try SimulatedDeviceJournal.groups(first + group.data) == [Self.first])
        #expect(throws: SimulatedDeviceJournalError.self) { try SimulatedDeviceJournal.groups(group.data + first) }
    }

    @Test("replay puts each sector's last content in place and keeps the last states")
    func replay() throws {
        let image = Data(repeating: 0xFF, count: 64)
        let replayed = try SimulatedDeviceJournal.replay([Self.first, Self.second], over: image, sectorSize: 16, state: Data("old".utf8))
        var expected = image
        expected.replaceSubrange(0..<16, with: Data(repeating: 0xA5, count: 16))
        expected.replaceSubrange(32..<48, with: Self.sector)
        #expect(replayed.image == expected)
        #expect(replayed.state == Data("state".utf8))
        #expect(replayed.running == Data())
    }

    @Test("a sector past the flash's end, of another size, or so far that its offset overflows is refused, not a trap")
    func foreignSector() throws {
        let image = Data(repeating: 0xFF, count: 64)
        for entry in [
            SimulatedDeviceJournal.Entry(kind: .sector, index: 4, bytes: Self.sector),
            SimulatedDeviceJournal.Entry(kind: .sector, index: 0, bytes: Data(count: 8)),
            SimulatedDeviceJournal.Entry(kind: .sector, index: Int(UInt32.max), bytes: Self.sector),
        ] {
            #expect(throws: SimulatedDeviceJournalError.self) { try SimulatedDeviceJournal.replay([[entry]], over: image, sectorSize: 16) }
        }
        #expect(throws: SimulatedDeviceJournalError.self) {
            try SimulatedDeviceJournal.replay([[Self.first[0]]], over: Data(count: 8), sectorSize: 16)
        }
        #expect(throws: SimulatedDeviceJournalError.self) {
            try SimulatedDeviceJournal.replay(
                [[SimulatedDeviceJournal.Entry(kind: .sector, index: Int.max / 2, bytes: Self.sector)]], over: image, sectorSize: 16)
        }
    }

    @Test("a flash file's sectors are read without the slot, the last of two for one sector counting, as the slot image has them")
    func flashContents() throws {
        let file = SimulatedDeviceJournal.group([
            .init(kind: .sector, index: 2, bytes: Data(repeating: 0x11, count: 16)),
            .init(kind: .sector, index: 0, bytes: Data(repeating: 0xA5, count: 16)),
            .init(kind: .sector, index: 2, bytes: Self.sector),
        ])
        let contents = try SimulatedDeviceJournal.flashContents(ofFlashFile: file, capacity: 64, sectorSize: 16)
        #expect(contents == .sectors([0: Data(repeating: 0xA5, count: 16), 2: Self.sector]))
        let slot = try SimulatedDeviceJournal.slotImage(fromFlashFile: file, capacity: 64, sectorSize: 16)
        #expect(slot == Data(repeating: 0xA5, count: 16) + Data(repeating: 0xFF, count: 16) + Self.sector + Data(repeating: 0xFF, count: 16))
        #expect(try SimulatedDeviceJournal.flashContents(ofFlashFile: slot, capacity: 64, sectorSize: 16) == .wholeSlot(slot))
        #expect(throws: SimulatedDeviceJournalError.self) {
            try SimulatedDeviceJournal.flashContents(ofFlashFile: file, capacity: 32, sectorSize: 16)  // sector 2 past a 2-sector slot
        }
    }

    @Test("a count reads back; 7 bytes or one past Int.max is refused")
    func count() throws {
        for value in [0, 1, 70_000, Int(UInt32.max) + 1, Int.max] {
            #expect(try SimulatedDeviceJournal.receivedCount(reading: SimulatedDeviceJournal.receivedCount(value)) == value)
        }
        #expect(throws: SimulatedDeviceJournalError.self) { try SimulatedDeviceJournal.receivedCount(reading: Data(count: 7)) }
        #expect(throws: SimulatedDeviceJournalError.self) { try SimulatedDeviceJournal.receivedCount(reading: Data(repeating: 0xFF, count: 8)) }
    }
}
