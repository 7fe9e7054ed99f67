import Foundation
import OTACore

/// Where to pick a transfer up from what Select reported, exactly as Nordic's clients do
/// (docs/protocols/nordic-dfu.md, "Resume"). A value type with no I/O, tested on its own.
public enum DFUResumePlan: Sendable, Equatable {
    /// Init packet stage: create the command object and send it all.
    case sendWholeInitPacket
    /// Init packet stage: the device has a prefix of this init packet; send the rest from `offset`.
    case sendRestOfInitPacket(from: Int)
    /// Init packet stage: the device has all of it; only Execute.
    case executeInitPacket

    /// Decides the init packet stage from Select(command)'s offset and CRC.
    public static func forInitPacket(_ initPacket: Data, offset: Int, crc: UInt32) -> DFUResumePlan {
        guard offset > 0, offset <= initPacket.count, CRC32.checksum(initPacket.prefix(offset)) == crc else {
            return .sendWholeInitPacket
        }
        return offset == initPacket.count ? .executeInitPacket : .sendRestOfInitPacket(from: offset)
    }
}

/// The data stage's starting point.
public struct DFUDataResumePoint: Sendable, Equatable {
    /// Where the first object to create starts (a multiple of the object size), or where the
    /// partially received object continues.
    public var offset: Int
    /// Execute the object that ends at `offset` first (it may not have been executed).
    public var executeFirst: Bool
    /// Continue the current object from `offset` without creating it.
    public var continuePartialObject: Bool

    /// Creates a resume point.
    public init(offset: Int, executeFirst: Bool, continuePartialObject: Bool) {
        self.offset = offset
        self.executeFirst = executeFirst
        self.continuePartialObject = continuePartialObject
    }

    /// Decides from Select(data)'s offset and CRC, for an image and the device's object size.
    public static func decide(image: Data, maximumObjectSize: Int, offset: Int, crc: UInt32) -> DFUDataResumePoint {
        guard offset > 0, offset <= image.count else {
            return DFUDataResumePoint(offset: 0, executeFirst: false, continuePartialObject: false)
        }
        guard CRC32.checksum(image.prefix(offset)) == crc else {
            // Re-create the object holding the bad bytes: the one before `offset` when aligned.
            let aligned = offset % maximumObjectSize == 0 ? offset - maximumObjectSize : offset - offset % maximumObjectSize
            return DFUDataResumePoint(offset: max(0, aligned), executeFirst: false, continuePartialObject: false)
        }
        if offset == image.count || offset % maximumObjectSize == 0 {
            return DFUDataResumePoint(offset: offset, executeFirst: true, continuePartialObject: false)
        }
        return DFUDataResumePoint(offset: offset, executeFirst: false, continuePartialObject: true)
    }
}
