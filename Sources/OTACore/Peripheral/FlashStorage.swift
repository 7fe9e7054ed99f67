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
    /// Programs the bytes `bytes` points at, at `offset`, as ``write(_:at:)-(Data,_)`` does: for a
    /// model that already holds a packet's bytes (to check or hash them), so they are not
    /// reached through `Data` again. The default copies them into `Data`; ``NORFlash`` programs
    /// them directly.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(FlashError)
    /// Reads `range`, clamped to the slot: bytes outside `0..<capacity` are not returned (see
    /// ``NORFlash``, the model every host uses).
    func read(_ range: Range<Int>) -> Data
    /// Calls `body` with the bytes of `range`, clamped to the slot as ``read(_:)`` is, in order
    /// and in pieces, without copying the whole range (a default reads 64 KiB at a time). A piece
    /// is valid only during its call; `body` must not erase or write the flash.
    func forEachPiece(of range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void)
}

/// A flash operation failed.
public struct FlashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

extension FlashStorage {
    /// Copies the bytes into `Data` and writes that.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(FlashError) {
        try write(Data(bytes), at: offset)
    }

    /// Reads `range` one 64 KiB window at a time (``NORFlash`` hands out its sectors instead,
    /// without copying them).
    public func forEachPiece(of range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void) {
        let clamped = range.clamped(to: 0..<capacity)
        var position = clamped.lowerBound
        while position < clamped.upperBound {
            let end = min(clamped.upperBound, position + 65_536)
            read(position..<end).withUnsafeBytes(body)
            position = end
        }
    }

    /// The CRC-32 of `range` (clamped to the slot as ``read(_:)`` is), computed without a copy of
    /// the whole range.
    public func crc32(of range: Range<Int>) -> UInt32 {
        var crc = CRC32()
        forEachPiece(of: range) { crc.update($0) }
        return crc.value
    }

    /// The SHA-256 digest of `range` (clamped to the slot as ``read(_:)`` is), computed without a
    /// copy of the whole range.
    public func sha256(of range: Range<Int>) -> [UInt8] {
        var sha = SHA256()
        forEachPiece(of: range) { sha.update($0) }
        return sha.finalize()
    }
}
