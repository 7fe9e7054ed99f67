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

/// The data stage's starting point: one of three, never two at once.
public enum DFUDataResumePoint: Sendable, Equatable {
    /// Create objects from `offset`, a multiple of the object size (0: start over).
    case create(from: Int)
    /// Execute the object that ends at `offset` first (it may not have been executed), then
    /// create from there.
    case executeThenCreate(from: Int)
    /// Continue the current, partially received object from `offset` without creating it.
    case continueObject(at: Int)

    /// Where the first object to create starts, or where the partially received object continues.
    public var offset: Int {
        switch self {
        case .create(let offset), .executeThenCreate(let offset), .continueObject(let offset): offset
        }
    }

    /// Execute the object that ends at ``offset`` first.
    public var executeFirst: Bool { if case .executeThenCreate = self { true } else { false } }

    /// Continue the current object from ``offset`` without creating it.
    public var continuePartialObject: Bool { if case .continueObject = self { true } else { false } }

    /// Decides from Select(data)'s offset and CRC, for an image and the device's object size.
    public static func decide(image: Data, maximumObjectSize: Int, offset: Int, crc: UInt32) -> DFUDataResumePoint {
        decide(count: image.count, maximumObjectSize: maximumObjectSize, offset: offset, crc: crc) { CRC32.checksum(image.prefix($0)) }
    }

    /// Decides as ``decide(image:maximumObjectSize:offset:crc:)`` for an image read window by
    /// window (the prefix's CRC is computed as it is read, never held whole).
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when the image's file changed since it was opened.
    public static func decide(image: FirmwareImage, maximumObjectSize: Int, offset: Int, crc: UInt32) throws(OTAError) -> DFUDataResumePoint {
        guard offset > 0, offset <= image.count else { return .create(from: 0) }
        let prefix = try image.crc32(of: 0..<offset)
        return decide(count: image.count, maximumObjectSize: maximumObjectSize, offset: offset, crc: crc) { _ in prefix }
    }

    private static func decide(count: Int, maximumObjectSize: Int, offset: Int, crc: UInt32, prefixCRC: (Int) -> UInt32) -> DFUDataResumePoint {
        guard offset > 0, offset <= count else {
            return .create(from: 0)
        }
        guard prefixCRC(offset) == crc else {
            // Re-create the object holding the bad bytes: the one before `offset` when aligned.
            let aligned = offset % maximumObjectSize == 0 ? offset - maximumObjectSize : offset - offset % maximumObjectSize
            return .create(from: max(0, aligned))
        }
        if offset == count || offset % maximumObjectSize == 0 {
            return .executeThenCreate(from: offset)
        }
        return .continueObject(at: offset)
    }
}
