import Foundation
import OTACore
import OTATransportSimulator

/// Where a simulated device is kept between runs: its flash, and the state a model keeps outside
/// the flash (``PersistentDeviceModel``: MCUboot's slot 0 and flags), each in a file of its own.
/// `--sim-state` keeps one device per profile this way, a campaign one per device.
struct SimulatedDeviceFiles {
    /// The flash, as ``SimulatedFlash/snapshot()`` writes it.
    var flash: URL
    /// The model's own state.
    var state: URL
    /// The error code of a file that cannot be read or written.
    var code: OTAError.Code

    /// Restores from the files what they hold; a missing file leaves that part as it is.
    ///
    /// - Throws: ``code``, naming the file and saying to delete it.
    func restore(_ device: SimulatedDevice) throws(OTAError) {
        var file = flash
        do {
            if FileManager.default.fileExists(atPath: flash.path) { try device.flash.restore(try Data(contentsOf: flash)) }
            file = state
            if let persistent = device.model as? any PersistentDeviceModel, FileManager.default.fileExists(atPath: state.path) {
                try persistent.restore(persistentState: try Data(contentsOf: state))
            }
        } catch {
            throw OTAError(code, "\(file.path): cannot restore the simulated device (\(error)); delete it to start that device afresh")
        }
    }

    /// Writes the device's flash and its model's state to the files (each replaced at once).
    ///
    /// - Throws: ``code``, naming the file.
    func save(_ device: SimulatedDevice) throws(OTAError) {
        do {
            try FileManager.default.createDirectory(at: flash.deletingLastPathComponent(), withIntermediateDirectories: true)
            try device.flash.snapshot().write(to: flash, options: .atomic)
            if let persistent = device.model as? any PersistentDeviceModel {
                try persistent.persistentState.write(to: state, options: .atomic)
            }
        } catch {
            throw OTAError(code, "\(flash.path): cannot save the simulated device (\(error.localizedDescription))")
        }
    }
}
