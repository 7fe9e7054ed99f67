import Foundation
import OTACore

/// The byte formats a simulated device is kept in between processes (decisions 0041, 0048 and
/// 0081): the journal of what changed since its files were written, its flash (one group of its
/// written sectors: ``flashFile(of:)``), and the count of data bytes it received. Pure reading
/// and writing of bytes; the files themselves are the tool's (`ota update --sim-state`,
/// `ota campaign`).
///
/// A journal is a run of groups, each appended at once before the device answers its central:
/// `SJG1`, the payload's length (u32 little-endian), the payload, and its CRC-32 (u32). A payload
/// is a run of entries: kind (u8), index (u32), length (u32), bytes. A process killed in the
/// middle of an append leaves a prefix of a group at the end (torn), and one killed after a
/// partial write of the payload leaves a damaged last group; both load as the keep before them.
/// Anything else that is not a run of whole groups no kill leaves, and is refused.
///
/// ```swift
/// var journal = SimulatedDeviceJournal.group([.init(kind: .sector, index: 3, bytes: sector)])
/// let groups = try SimulatedDeviceJournal.groups(journal)   // [[that entry]]
/// ```
public enum SimulatedDeviceJournal {
    /// What an entry holds.
    public enum Kind: UInt8, Sendable, Hashable {
        /// One flash sector's content, ``Entry/index`` the sector's number.
        case sector = 1
        /// The model's non-volatile state (``PersistentDeviceModel/persistentState``).
        case state = 2
        /// The model's RAM that outlives the central (``RunningDeviceModel/runningState``).
        case running = 3
    }

    /// One entry of a group.
    public struct Entry: Sendable, Hashable {
        /// What it holds.
        public var kind: Kind
        /// The sector's number for ``Kind/sector``; 0 otherwise.
        public var index: Int
        /// Its content.
        public var bytes: Data

        /// Creates an entry; `index` is 0...UInt32.max and `bytes` at most UInt32.max bytes.
        public init(kind: Kind, index: Int = 0, bytes: Data) {
            self.kind = kind
            self.index = index
            self.bytes = bytes
        }
    }

    /// The device a journal's groups leave, replayed over its files (``replay(_:over:sectorSize:)``).
    public struct Replayed: Sendable, Hashable {
        /// The flash, each sector the journal names replaced by its last content there.
        public var image: Data
        /// The model's state the journal last held, if it held one.
        public var state: Data?
        /// The model's running state the journal last held, if it held one.
        public var running: Data?
    }

    static let magic: [UInt8] = Array("SJG1".utf8)
    /// Magic, length and CRC: what a group holds besides its payload.
    static let framing = 12

    /// One group holding `entries`, as a keep appends it.
    public static func group(_ entries: [Entry]) -> Data {
        var payload = ByteWriter(capacity: entries.reduce(0) { $0 + 9 + $1.bytes.count })
        for entry in entries {
            payload.u8(entry.kind.rawValue)
            payload.u32(UInt32(entry.index))
            payload.u32(UInt32(entry.bytes.count))
            payload.bytes(entry.bytes)
        }
        var group = ByteWriter(capacity: framing + payload.data.count)
        group.bytes(Data(magic))
        group.u32(UInt32(payload.data.count))
        group.bytes(payload.data)
        group.u32(CRC32.checksum(payload.data))
        return group.data
    }

    /// The entries of every whole group of `journal`, group by group, in order. Reading stops at a
    /// torn last group (what a killed append leaves: a prefix of a group) or a damaged last group
    /// (its CRC wrong, or its payload not a run of entries of a known kind).
    ///
    /// - Throws: ``SimulatedDeviceJournalError`` for anything else: bytes that do not start a
    ///   group, or a damaged group with more after it. No kill leaves those; the file is damaged
    ///   or not a journal, and replaying part of it could give a device that never was.
    public static func groups(_ journal: Data) throws(SimulatedDeviceJournalError) -> [[Entry]] {
        var reader = ByteReader(journal)
        var groups: [[Entry]] = []
        while reader.remaining > 0 {
            let position = reader.position
            let remaining = reader.remaining
            guard let head = reader.bytes(min(magic.count, remaining)), Array(head) == Array(magic.prefix(head.count)) else {
                throw SimulatedDeviceJournalError("byte \(position) does not start a journal group: the journal is damaged or not one")
            }
            // A prefix of a group: the append a kill cut short.
            guard remaining >= framing, let length = reader.u32(), Int(length) <= remaining - framing, let payload = reader.bytes(Int(length)),
                let check = reader.u32()
            else { break }
            guard CRC32.checksum(payload) == check, let group = entries(payload) else {
                // The last group damaged loads as the keep before it; one in the middle is not
                // what a kill leaves.
                if reader.remaining == 0 { break }
                throw SimulatedDeviceJournalError("the journal group at byte \(position) is damaged, with more after it")
            }
            groups.append(group)
        }
        return groups
    }

    /// A device's flash as its file keeps it (decision 0081): one group (framed and checked as a
    /// journal's) holding each sector that is not erased, so that the file grows with what was
    /// written, not with the slot, and so does the time to make it (only the programmed sectors
    /// are visited). A sector programmed with nothing but `0xFF` is left out: it reads and
    /// programs as an erased one, as a restore from a whole-slot image took it.
    public static func flashFile(of flash: SimulatedFlash) -> Data {
        var entries: [Entry] = []
        flash.forEachProgrammedSector { index, sector in
            if sector.contains(where: { $0 != 0xFF }) { entries.append(Entry(kind: .sector, index: index, bytes: Data(sector))) }
        }
        return group(entries)
    }

    /// What a device's flash file holds (``flashContents(ofFlashFile:capacity:sectorSize:)``).
    public enum FlashContents: Sendable, Hashable {
        /// The sectors of a ``flashFile(of:)``, by index (offset / sector size), each exactly one
        /// sector long; every other sector is erased.
        case sectors([Int: Data])
        /// A whole slot, as an older `ota` wrote the file.
        case wholeSlot(Data)

        /// The slot image, `capacity` bytes (the sectors over an erased slot).
        public func slotImage(capacity: Int, sectorSize: Int) -> Data {
            switch self {
            case .wholeSlot(let image):
                return image
            case .sectors(let sectors):
                var image = Data(repeating: 0xFF, count: capacity)
                for (index, bytes) in sectors { image.replaceSubrange((index * sectorSize)..<((index + 1) * sectorSize), with: bytes) }
                return image
            }
        }
    }

    /// What a device's flash file holds, for a slot of `capacity` bytes in sectors of
    /// `sectorSize`: the sectors of a ``flashFile(of:)`` (read without making the slot: a restore
    /// costs what was written), or a file of the format before it (the whole slot, exactly
    /// `capacity` bytes) as it is. Of two entries for one sector the last counts, as a replay
    /// takes them.
    ///
    /// - Throws: ``SimulatedDeviceJournalError`` for a file that is neither: a compact file that
    ///   is torn or damaged, holds anything but this slot's sectors, or a file of another size.
    public static func flashContents(ofFlashFile file: Data, capacity: Int, sectorSize: Int) throws(SimulatedDeviceJournalError) -> FlashContents {
        if let entries = wholeGroup(file), entries.allSatisfy({ $0.kind == .sector }) {
            var sectors: [Int: Data] = [:]
            for entry in entries {
                try checkSector(entry, sectorSize: sectorSize, capacity: capacity)
                sectors[entry.index] = entry.bytes
            }
            return .sectors(sectors)
        }
        guard file.count == capacity else {
            throw SimulatedDeviceJournalError("not a simulated device's flash: \(file.count) bytes, neither one whole group nor a \(capacity)-byte slot")
        }
        return .wholeSlot(file)
    }

    /// The slot image a device's flash file holds, `capacity` bytes
    /// (``flashContents(ofFlashFile:capacity:sectorSize:)``, over an erased slot).
    ///
    /// - Throws: ``SimulatedDeviceJournalError`` as ``flashContents(ofFlashFile:capacity:sectorSize:)``.
    public static func slotImage(fromFlashFile file: Data, capacity: Int, sectorSize: Int) throws(SimulatedDeviceJournalError) -> Data {
        try flashContents(ofFlashFile: file, capacity: capacity, sectorSize: sectorSize).slotImage(capacity: capacity, sectorSize: sectorSize)
    }

    /// Checks that a sector entry is one of a slot of `capacity` bytes in sectors of `sectorSize`.
    private static func checkSector(_ entry: Entry, sectorSize: Int, capacity: Int) throws(SimulatedDeviceJournalError) {
        let (start, overflow) = entry.index.multipliedReportingOverflow(by: sectorSize)
        guard sectorSize > 0, !overflow, entry.bytes.count == sectorSize, start <= capacity - sectorSize else {
            throw SimulatedDeviceJournalError("a sector that is not one of this device's")
        }
    }

    /// The entries of `data` when it is exactly one whole, undamaged group.
    private static func wholeGroup(_ data: Data) -> [Entry]? {
        var reader = ByteReader(data)
        guard let head = reader.bytes(magic.count), Array(head) == magic, let length = reader.u32(), Int(length) == data.count - framing,
            let payload = reader.bytes(Int(length)), let check = reader.u32(), CRC32.checksum(payload) == check
        else { return nil }
        return entries(payload)
    }

    /// The entries of one group's payload, or `nil` when they do not fill it exactly or one is of
    /// a kind no keep writes.
    private static func entries(_ payload: Data) -> [Entry]? {
        var reader = ByteReader(payload)
        var entries: [Entry] = []
        while reader.remaining > 0 {
            guard let raw = reader.u8(), let kind = Kind(rawValue: raw), let index = reader.u32(), let count = reader.u32(),
                let bytes = reader.bytes(Int(count))
            else { return nil }
            entries.append(Entry(kind: kind, index: Int(index), bytes: bytes))
        }
        return entries
    }

    /// The device `groups` leave when replayed in order over `image` (the flash file's content, or
    /// the device's erased flash when there is none), the state and running state its files held.
    ///
    /// - Throws: ``SimulatedDeviceJournalError`` for a sector entry that is not one of a flash of
    ///   `image.count` bytes in sectors of `sectorSize` (a journal of another device).
    public static func replay(
        _ groups: [[Entry]], over image: Data, sectorSize: Int, state: Data? = nil, running: Data? = nil
    ) throws(SimulatedDeviceJournalError) -> Replayed {
        var replayed = Replayed(image: image, state: state, running: running)
        for entry in groups.joined() {
            switch entry.kind {
            case .sector:
                try checkSector(entry, sectorSize: sectorSize, capacity: image.count)
                let start = entry.index * sectorSize
                replayed.image.replaceSubrange(start..<(start + sectorSize), with: entry.bytes)
            case .state:
                replayed.state = entry.bytes
            case .running:
                replayed.running = entry.bytes
            }
        }
        return replayed
    }

    /// `count` as the count file holds it: 8 bytes, little-endian.
    public static func receivedCount(_ count: Int) -> Data {
        var writer = ByteWriter(capacity: 8)
        writer.u32(UInt32(truncatingIfNeeded: count))
        writer.u32(UInt32(truncatingIfNeeded: UInt64(truncatingIfNeeded: count) >> 32))
        return writer.data
    }

    /// The count a count file holds.
    ///
    /// - Throws: ``SimulatedDeviceJournalError`` for anything but 8 bytes holding 0...Int.max.
    public static func receivedCount(reading data: Data) throws(SimulatedDeviceJournalError) -> Int {
        var reader = ByteReader(data)
        guard data.count == 8, let low = reader.u32(), let high = reader.u32(), let value = Int(exactly: UInt64(high) << 32 | UInt64(low)) else {
            throw SimulatedDeviceJournalError("not an 8-byte count")
        }
        return value
    }
}

/// What is wrong with a simulated device's journal or count.
public struct SimulatedDeviceJournalError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, in words.
    public var description: String

    /// Creates the error.
    public init(_ description: String) { self.description = description }
}
