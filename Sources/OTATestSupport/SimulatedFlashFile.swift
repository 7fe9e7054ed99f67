import Foundation
import OTACore
import OTATransportSimulator

/// The slot a simulated device's flash file holds (`--sim-state DIR/PROFILE.flash`, a campaign's
/// `FILE.devices/PROFILE-N.flash`): its written sectors over an erased slot of `profile`'s size
/// (decision 0081), or a whole-slot file of an older `ota` as it is.
public func simulatedSlot(inFlashFile file: URL, profile: String) throws -> Data {
    let hardware = try DeviceProfile.named(profile)
    return try SimulatedDeviceJournal.slotImage(
        fromFlashFile: try Data(contentsOf: file), capacity: hardware.slotSize, sectorSize: hardware.flash.sectorSize)
}
