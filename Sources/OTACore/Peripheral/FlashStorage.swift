import Foundation

/// NOR-style flash as a device model sees it: erase whole sectors to 0xFF, then program bytes.
///
/// Programming can only clear bits, like real NOR flash: writing over bytes that were not erased
/// stores the bitwise AND of old and new, so a model that forgets to erase corrupts its image as
/// real firmware would. Hosts account the time each operation takes. ``NORFlash`` is the model;
/// erases and writes outside the slot throw, reads are clamped to it.
public protocol FlashStorage: AnyObject, Sendable {
    /// Size of the update slot in bytes.
    var capacity: Int { get }
    /// Erase granularity in bytes.
    var sectorSize: Int { get }
    /// Erases the sectors covering `range` (rounded out to sector boundaries).
    func erase(_ range: Range<Int>) throws(FlashError)
    /// Programs `bytes` at `offset`.
    func write(_ bytes: Data, at offset: Int) throws(FlashError)
    /// Reads `range`, clamped to the slot: bytes outside `0..<capacity` are not returned (see
    /// ``NORFlash``, the model every host uses).
    func read(_ range: Range<Int>) -> Data
}

/// A flash operation failed.
public struct FlashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
