import Foundation
import OTACore

/// What the bootloader reported while the engine looked for the resume point: Select(command),
/// then Select(data), in that order so the data object is the current one when the run starts.
///
/// ``NordicDFUClient`` hands it to the run that follows (its `Checkpoint`). The run trusts the
/// data selection only when the command selection shows this image's init packet: the
/// bootloader keeps the last init packet it received, offset and CRC-32, in its settings after
/// executing it (SDK 15.3 `s_dfu_settings.progress.command_offset/crc`), so a whole, matching
/// command object means the data was received under this init packet and no other.
public struct NordicDFUCheckpoint: Sendable, Hashable {
    /// What Select(command) reported: the init packet the bootloader holds.
    public var command: DFUObjectSelection
    /// What Select(data) reported: the image bytes the bootloader holds.
    public var data: DFUObjectSelection

    /// Whether the bootloader holds all of `initPacket` in its command object: offset equal to
    /// its length and CRC-32 equal to its CRC-32.
    public func holdsWhole(initPacket: Data) -> Bool {
        !initPacket.isEmpty && command.offset == initPacket.count && command.crc == CRC32.checksum(initPacket)
    }
}
