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
/// The journal (`NAME.journal`, decision 0041; its bytes are ``SimulatedDeviceJournal``'s) is
/// appended one group at a time, each group the
/// sectors that changed since the previous one and the model's states, framed by a length and a
/// CRC-32: a process killed in the middle of an append leaves a torn last group, which is
/// ignored, so the device loads as the previous group left it. Every group holds the newest
/// content of what it names, and the journal holds every sector changed since the flash file
/// was written, so replaying it over the flash file before or after that file is rewritten gives
/// the same device: ``save(_:)`` appends, rewrites the files (each replaced at once), then
/// deletes the journal, and a kill between any two of those steps loses nothing.
struct SimulatedDeviceFiles {
    /// The flash: its written sectors (``SimulatedDeviceJournal/flashFile(of:)``, decision 0081),
    /// or, as an older `ota` wrote it, the whole slot.
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

    /// Restores from the files what they hold, the journal replayed over them; a missing file
    /// leaves that part as it is. A journal found is folded into the files (``save(_:)``).
    ///
    /// - Throws: ``code``, naming the file and saying to delete it.
    func restore(_ device: SimulatedDevice) throws(OTAError) {
        var file = flash
        var replayed = false
        do {
            let capacity = device.flash.capacity
            let sectorSize = device.flash.sectorSize
            // Its sectors, not the slot: a restore costs what was written (a 12 MiB slot per
            // device of a campaign otherwise), unless a journal is replayed over it.
            var contents =
                FileManager.default.fileExists(atPath: flash.path)
                ? try SimulatedDeviceJournal.flashContents(ofFlashFile: try Data(contentsOf: flash), capacity: capacity, sectorSize: sectorSize)
                : nil
            file = state
            var modelState = FileManager.default.fileExists(atPath: state.path) ? try Data(contentsOf: state) : nil
            file = running
            var runningState = FileManager.default.fileExists(atPath: running.path) ? try Data(contentsOf: running) : nil
            file = journal
            if FileManager.default.fileExists(atPath: journal.path) {
                let replay = try SimulatedDeviceJournal.replay(
                    try SimulatedDeviceJournal.groups(try Data(contentsOf: journal)),
                    over: contents?.slotImage(capacity: capacity, sectorSize: sectorSize) ?? device.flash.snapshot(),
                    sectorSize: sectorSize, state: modelState, running: runningState)
                contents = .wholeSlot(replay.image)
                modelState = replay.state
                runningState = replay.running
                replayed = true
            }
            file = flash
            switch contents {
            case .sectors(let sectors)?: try device.flash.restore(sectors: sectors)
            case .wholeSlot(let image)?: try device.flash.restore(image)
            case nil: break
            }
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
                device.dataBytesReceived = try SimulatedDeviceJournal.receivedCount(reading: try Data(contentsOf: received))
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
        let size = device.flash.sectorSize
        var entries = sectors.map { sector in
            SimulatedDeviceJournal.Entry(kind: .sector, index: sector, bytes: device.flash.read((sector * size)..<((sector + 1) * size)))
        }
        if let persistent { entries.append(SimulatedDeviceJournal.Entry(kind: .state, bytes: persistent.persistentState)) }
        if let running { entries.append(SimulatedDeviceJournal.Entry(kind: .running, bytes: running.runningState)) }
        let group = SimulatedDeviceJournal.group(entries)
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
        let bytes = SimulatedDeviceJournal.receivedCount(count)
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
            try SimulatedDeviceJournal.flashFile(of: device.flash).write(to: flash, options: .atomic)
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
