import Foundation
import OTACore
import OTATransportSimulator
import Synchronization

/// Where a simulated device is kept between runs: its flash, the state a model keeps outside
/// the flash (``PersistentDeviceModel``: MCUboot's slot 0 and flags) and the RAM a model keeps
/// while the device runs on (``RunningDeviceModel``: Zephyr's upload in progress), each in a
/// file of its own; and, for a device kept as it goes (``keepAsItGoes(_:)``: a campaign's, and
/// `ota update`'s since decision 0048), a journal of what changed since those files were
/// written and a count of the data bytes it received.
/// `--sim-state` keeps one device per profile this way, a campaign one per device.
///
/// The journal (`NAME.journal`, decision 0041) is appended one group at a time, each group the
/// sectors that changed since the previous one and the model's states, framed by a length and a
/// CRC-32: a process killed in the middle of an append leaves a torn last group, which is
/// ignored, so the device loads as the previous group left it. Every group holds the newest
/// content of what it names, and the journal holds every sector changed since the flash file
/// was written, so replaying it over the flash file before or after that file is rewritten gives
/// the same device: ``save(_:)`` appends, rewrites the files (each replaced at once), then
/// deletes the journal, and a kill between any two of those steps loses nothing.
struct SimulatedDeviceFiles {
    /// The flash, as ``SimulatedFlash/snapshot()`` writes it.
    var flash: URL
    /// The model's own state.
    var state: URL
    /// The error code of a file that cannot be read or written.
    var code: OTAError.Code

    /// What changed since ``flash`` and ``state`` were written.
    var journal: URL { flash.deletingPathExtension().appendingPathExtension("journal") }
    /// The model's RAM that outlives the central (``RunningDeviceModel``), as the files were
    /// written; absent when the model holds none.
    var running: URL { flash.deletingPathExtension().appendingPathExtension("running") }
    /// ``SimulatedDevice/dataBytesReceived``, 8 bytes little-endian.
    var received: URL { flash.deletingPathExtension().appendingPathExtension("received") }

    private static let groupMagic = Data("SJG1".utf8)
    private static let sectorEntry: UInt8 = 1
    private static let stateEntry: UInt8 = 2
    private static let runningEntry: UInt8 = 3

    /// Restores from the files what they hold, the journal replayed over them; a missing file
    /// leaves that part as it is. A journal found is folded into the files (``save(_:)``).
    ///
    /// - Throws: ``code``, naming the file and saying to delete it.
    func restore(_ device: SimulatedDevice) throws(OTAError) {
        var file = flash
        var replayed = false
        do {
            var image = FileManager.default.fileExists(atPath: flash.path) ? try Data(contentsOf: flash) : nil
            file = state
            var modelState = FileManager.default.fileExists(atPath: state.path) ? try Data(contentsOf: state) : nil
            file = running
            var runningState = FileManager.default.fileExists(atPath: running.path) ? try Data(contentsOf: running) : nil
            file = journal
            if FileManager.default.fileExists(atPath: journal.path) {
                var contents = image ?? device.flash.snapshot()
                for entry in try Self.entries(try Data(contentsOf: journal)) {
                    switch entry.kind {
                    case Self.sectorEntry:
                        let start = entry.index * device.flash.sectorSize
                        guard entry.bytes.count == device.flash.sectorSize, start + entry.bytes.count <= contents.count else {
                            throw SimulatedDeviceFilesError("a sector that is not one of this device's")
                        }
                        contents.replaceSubrange(start..<(start + entry.bytes.count), with: entry.bytes)
                    case Self.runningEntry:
                        runningState = entry.bytes
                    default:
                        modelState = entry.bytes
                    }
                }
                image = contents
                replayed = true
            }
            file = flash
            if let image { try device.flash.restore(image) }
            file = state
            if let persistent = device.model as? any PersistentDeviceModel, let modelState {
                try persistent.restore(persistentState: modelState)
            }
            file = running
            if let model = device.model as? any RunningDeviceModel, let runningState {
                try model.restore(runningState: runningState)
            }
            file = received
            if FileManager.default.fileExists(atPath: received.path) {
                let count = try Data(contentsOf: received)
                var reader = ByteReader(count)
                guard count.count == 8, let low = reader.u32(), let high = reader.u32(), let value = Int(exactly: UInt64(high) << 32 | UInt64(low)) else {
                    throw SimulatedDeviceFilesError("not an 8-byte count")
                }
                device.dataBytesReceived = value
            }
        } catch {
            throw OTAError(code, "\(file.path): cannot restore the simulated device (\(error)); delete it to start that device afresh")
        }
        if replayed { try save(device) }
    }

    /// Appends to the journal the sectors changed since the last call (or the restore) and the
    /// model's state, as one group: the device as it is now survives the process.
    ///
    /// - Throws: ``code``, naming the journal.
    func keep(_ device: SimulatedDevice) throws(OTAError) {
        let sectors = device.flash.takeChangedSectors()
        let persistent = device.model as? any PersistentDeviceModel
        let running = device.model as? any RunningDeviceModel
        guard !sectors.isEmpty || persistent != nil || running != nil else { return }
        var payload = Data()
        let size = device.flash.sectorSize
        for sector in sectors {
            Self.append(entry: Self.sectorEntry, index: sector, bytes: device.flash.read((sector * size)..<((sector + 1) * size)), to: &payload)
        }
        if let persistent { Self.append(entry: Self.stateEntry, index: 0, bytes: persistent.persistentState, to: &payload) }
        if let running { Self.append(entry: Self.runningEntry, index: 0, bytes: running.runningState, to: &payload) }
        var length = ByteWriter()
        length.u32(UInt32(payload.count))
        var check = ByteWriter()
        check.u32(CRC32.checksum(payload))
        let group = Self.groupMagic + length.data + payload + check.data
        do {
            if !FileManager.default.fileExists(atPath: journal.path) {
                // Once per journal, not at every answer the device gives.
                try FileManager.default.createDirectory(at: journal.deletingLastPathComponent(), withIntermediateDirectories: true)
                guard FileManager.default.createFile(atPath: journal.path, contents: nil) else {
                    throw SimulatedDeviceFilesError("cannot create it")
                }
            }
            let handle = try FileHandle(forWritingTo: journal)
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: group)
        } catch {
            throw OTAError(code, "\(journal.path): cannot keep the simulated device (\(error))")
        }
    }

    /// Keeps `device` as it goes until ``KeptDevice/end()``: before each answer it gives the
    /// central, what changed is appended to the journal (``keep(_:)``), and every data write's
    /// bytes are counted in ``received``. A process killed meanwhile leaves the device as its
    /// last answer left it.
    ///
    /// - Throws: ``code``, naming ``received`` when it cannot be opened.
    func keepAsItGoes(_ device: SimulatedDevice) throws(OTAError) -> KeptDevice {
        let keeping = KeptDevice(device: device, handle: try openReceived())
        device.persistence = SimulatedDevice.Persistence(
            replying: {
                do throws(OTAError) {
                    try keep(device)
                } catch {
                    keeping.failed(error)
                }
            },
            received: { (total: Int) in
                do throws(OTAError) {
                    try keepReceived(total, handle: keeping.handle)
                } catch {
                    keeping.failed(error)
                }
            })
        return keeping
    }

    /// Writes ``SimulatedDevice/dataBytesReceived`` to ``received`` in place (8 bytes at once).
    ///
    /// - Throws: ``code``, naming the file.
    func keepReceived(_ count: Int, handle: FileHandle) throws(OTAError) {
        var writer = ByteWriter()
        writer.u32(UInt32(truncatingIfNeeded: count))
        writer.u32(UInt32(truncatingIfNeeded: UInt64(count) >> 32))
        let bytes = writer.data
        do {
            try handle.seek(toOffset: 0)
            try handle.write(contentsOf: bytes)
        } catch {
            throw OTAError(code, "\(received.path): cannot keep the simulated device's count (\(error))")
        }
    }

    /// Opens ``received`` for ``keepReceived(_:handle:)``, creating it.
    ///
    /// - Throws: ``code``, naming the file.
    func openReceived() throws(OTAError) -> FileHandle {
        do {
            if !FileManager.default.fileExists(atPath: received.path) {
                try FileManager.default.createDirectory(at: received.deletingLastPathComponent(), withIntermediateDirectories: true)
                guard FileManager.default.createFile(atPath: received.path, contents: Data(count: 8)) else {
                    throw SimulatedDeviceFilesError("cannot create it")
                }
            }
            return try FileHandle(forWritingTo: received)
        } catch {
            throw OTAError(code, "\(received.path): cannot keep the simulated device's count (\(error))")
        }
    }

    /// Writes the device's flash and its model's state to the files (each replaced at once),
    /// after bringing a journal up to date, then deletes the journal.
    ///
    /// - Throws: ``code``, naming the file.
    func save(_ device: SimulatedDevice) throws(OTAError) {
        if FileManager.default.fileExists(atPath: journal.path) { try keep(device) }
        do {
            try FileManager.default.createDirectory(at: flash.deletingLastPathComponent(), withIntermediateDirectories: true)
            try device.flash.snapshot().write(to: flash, options: .atomic)
            if let persistent = device.model as? any PersistentDeviceModel {
                try persistent.persistentState.write(to: state, options: .atomic)
            }
            if let model = device.model as? any RunningDeviceModel {
                let runningState = model.runningState
                if !runningState.isEmpty {
                    try runningState.write(to: running, options: .atomic)
                } else if FileManager.default.fileExists(atPath: running.path) {
                    try FileManager.default.removeItem(at: running)
                }
            }
            if FileManager.default.fileExists(atPath: journal.path) { try FileManager.default.removeItem(at: journal) }
        } catch {
            throw OTAError(code, "\(flash.path): cannot save the simulated device (\(error.localizedDescription))")
        }
        _ = device.flash.takeChangedSectors()
    }

    /// The entries of every whole group of `journal`, in order. Reading stops at a torn last
    /// group (what a killed append leaves: a prefix of a group) or a damaged last group.
    ///
    /// - Throws: ``SimulatedDeviceFilesError`` for anything else: bytes that do not start a
    ///   group, or a damaged group with more after it. No kill leaves those; the file is
    ///   damaged or not a journal, and replaying part of it could give a device that never was.
    static func entries(_ journal: Data) throws(SimulatedDeviceFilesError) -> [(kind: UInt8, index: Int, bytes: Data)] {
        var reader = ByteReader(journal)
        var entries: [(kind: UInt8, index: Int, bytes: Data)] = []
        while reader.remaining > 0 {
            let position = reader.position
            let remaining = reader.remaining
            guard let head = reader.bytes(min(groupMagic.count, remaining)), head == groupMagic.prefix(head.count) else {
                throw SimulatedDeviceFilesError("byte \(position) does not start a journal group: the journal is damaged or not one")
            }
            // A prefix of a group: the append a kill cut short.
            guard remaining >= 12, let length = reader.u32(), Int(length) <= remaining - 12, let payload = reader.bytes(Int(length)),
                let check = reader.u32()
            else { break }
            guard CRC32.checksum(payload) == check, let group = Self.group(payload) else {
                // The last group damaged loads as the keep before it; one in the middle is not
                // what a kill leaves.
                if reader.remaining == 0 { break }
                throw SimulatedDeviceFilesError("the journal group at byte \(position) is damaged, with more after it")
            }
            entries += group
        }
        return entries
    }

    /// The entries of one group's payload (kind, index, length, bytes), or `nil` when they do not
    /// fill it exactly.
    private static func group(_ payload: Data) -> [(kind: UInt8, index: Int, bytes: Data)]? {
        var reader = ByteReader(payload)
        var group: [(kind: UInt8, index: Int, bytes: Data)] = []
        while reader.remaining > 0 {
            guard let kind = reader.u8(), let index = reader.u32(), let count = reader.u32(), let bytes = reader.bytes(Int(count)) else { return nil }
            group.append((kind, Int(index), bytes))
        }
        return group
    }

    private static func append(entry kind: UInt8, index: Int, bytes: Data, to payload: inout Data) {
        var header = ByteWriter(capacity: 9)
        header.u8(kind)
        header.u32(UInt32(index))
        header.u32(UInt32(bytes.count))
        payload.append(header.data)
        payload.append(bytes)
    }
}

/// A device kept as it goes (``SimulatedDeviceFiles/keepAsItGoes(_:)``): its count's open
/// file, and the first error keeping it met (the simulation's callbacks cannot throw; ``end()``
/// does).
final class KeptDevice: Sendable {
    let device: SimulatedDevice
    let handle: FileHandle
    private let firstError = Mutex<OTAError?>(nil)

    init(device: SimulatedDevice, handle: FileHandle) {
        self.device = device
        self.handle = handle
    }

    func failed(_ error: OTAError) { firstError.withLock { $0 = $0 ?? error } }

    /// Stops keeping the device and closes its count.
    ///
    /// - Throws: the first error keeping it met: a kill would have lost what it acknowledged.
    func end() throws(OTAError) {
        device.persistence = nil
        try? handle.close()
        if let error = firstError.withLock({ $0 }) { throw error }
    }
}

/// What is wrong with a simulated device's file.
struct SimulatedDeviceFilesError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
