import Foundation

/// NOR-style flash as a device model sees it: erase whole sectors to 0xFF, then program bytes.
///
/// Programming can only clear bits, like real NOR flash: writing over bytes that were not erased
/// stores the bitwise AND of old and new, so a model that forgets to erase corrupts its image as
/// real firmware would. Hosts account the time each operation takes.
public protocol FlashStorage: AnyObject, Sendable {
    /// Size of the update slot in bytes.
    var capacity: Int { get }
    /// Erase granularity in bytes.
    var sectorSize: Int { get }
    /// Erases the sectors covering `range` (rounded out to sector boundaries).
    func erase(_ range: Range<Int>) throws(FlashError)
    /// Programs `bytes` at `offset`.
    func write(_ bytes: Data, at offset: Int) throws(FlashError)
    /// Reads `range`.
    func read(_ range: Range<Int>) -> Data
}

/// A flash operation failed.
public struct FlashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
