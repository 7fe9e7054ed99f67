import Foundation
import OTACore
import Synchronization

/// A device's update slot in NOR flash: the one model, ``NORFlash``'s (erased bytes read 0xFF,
/// programming ANDs bits in, erases and writes outside the slot throw, reads are clamped to it),
/// with every operation costing time that the hosting device accounts.
///
/// The contents (``NORFlashSectors``) are kept beside the timing and counters behind one lock, so
/// a write takes one lock.
///
/// Contents survive disconnects and reboots, and processes through ``snapshot()`` and
/// ``restore(_:)``. Faults can be injected: a write or erase that fails, as worn or protected
/// flash does.
public final class SimulatedFlash: FlashStorage, Sendable {
    private struct State {
        var contents: NORFlashSectors
        // Times are attoseconds (`Duration.attoseconds`): the same exact values, added and
        // compared inline rather than through `Duration`'s operators in the standard library.
        var pendingCost: Int128 = 0
        /// When the hosting device finishes the work folded in so far (``settle(attoseconds:notBefore:)``):
        /// kept with the cost so that settling takes one lock.
        var busyUntil: Int128 = 0
        /// The last write's length and its programming time: a data stream writes one length,
        /// so the `Double` computation of ``FlashTiming/writeTime(_:)`` runs once, not per write.
        var lastWriteCount = -1
        var lastWriteCost: Int128 = 0
        var failing: String?
        var bytesWritten = 0
        var sectorsErased = 0
        /// The sectors erased or programmed since the last ``takeChangedSectors()``, one bit each
        /// (a 12 MiB slot of 4 KiB sectors takes 48 words): marking one per write hashes nothing.
        var changedSectors: [UInt64]

        /// Marks the sectors `range` touches; `sectorShift` is log2 of `sectorSize` when that is a
        /// power of two (every stock profile's), else -1. A write into a sector already marked
        /// (a data stream's, nearly always) reads its word and changes nothing: no division and
        /// no store into the array, which would check that it is uniquely referenced.
        mutating func markChanged(_ range: Range<Int>, sectorSize: Int, sectorShift: Int) {
            guard !range.isEmpty else { return }
            var sector: Int
            let last: Int
            if sectorShift >= 0 {
                sector = range.lowerBound >> sectorShift
                last = (range.upperBound - 1) >> sectorShift
            } else {
                sector = range.lowerBound / sectorSize
                last = (range.upperBound - 1) / sectorSize
            }
            if sector == last, changedSectors[sector >> 6] & 1 << UInt64(sector & 63) != 0 { return }
            while sector <= last {
                changedSectors[sector >> 6] |= 1 << UInt64(sector & 63)
                sector += 1
            }
        }

        mutating func takeChanged() -> [Int] {
            var sectors: [Int] = []
            for (index, word) in changedSectors.enumerated() where word != 0 {
                var bits = word
                while bits != 0 {
                    sectors.append(index << 6 + bits.trailingZeroBitCount)
                    bits &= bits - 1
                }
                changedSectors[index] = 0
            }
            return sectors
        }
    }

    /// Erase and write timing.
    public let timing: FlashTiming
    public let capacity: Int
    public let sectorSize: Int
    /// log2 of ``sectorSize`` when that is a power of two, else -1 (``State/markChanged(_:sectorSize:sectorShift:)``).
    private let sectorShift: Int
    private let state: Mutex<State>
    /// How many times the slot's work, busy time or contents changed: counted under the lock (one
    /// writer at a time, so a load and a store, no read-modify-write) and read without it by the
    /// link, which keeps the busy time it settled while the count has not moved
    /// (``settleCounting(attoseconds:notBefore:)``).
    private let changes = Atomic<UInt64>(0)

    /// Creates an erased slot of `capacity` bytes.
    public init(capacity: Int, timing: FlashTiming) {
        precondition(capacity > 0 && capacity % timing.sectorSize == 0, "capacity must be whole sectors")
        self.timing = timing
        self.capacity = capacity
        sectorSize = timing.sectorSize
        sectorShift = sectorSize.nonzeroBitCount == 1 ? sectorSize.trailingZeroBitCount : -1
        let sectors = capacity / timing.sectorSize
        state = Mutex(
            State(
                contents: NORFlashSectors(capacity: capacity, sectorSize: timing.sectorSize),
                changedSectors: [UInt64](repeating: 0, count: (sectors + 63) / 64)))
    }

    public func erase(_ range: Range<Int>) throws(FlashError) {
        try NORFlashSectors.checkErase(range, capacity: capacity)
        let erased = NORFlashSectors.sectors(covering: range, sectorSize: sectorSize, capacity: capacity)
        try state.withLock { (state: inout State) throws(FlashError) in
            if let failing = state.failing { throw FlashError(failing) }
            state.contents.erase(sectorsOf: erased)
            let sectors = erased.count / sectorSize
            state.sectorsErased += sectors
            state.pendingCost += timing.sectorEraseTime.attoseconds * Int128(sectors)
            state.markChanged(range, sectorSize: sectorSize, sectorShift: sectorShift)
            noteChange()
        }
    }

    public func write(_ bytes: Data, at offset: Int) throws(FlashError) {
        try program(count: bytes.count, at: offset) { $0.write(bytes, at: offset) }
    }

    /// Programs the bytes `bytes` points at, at `offset`, as ``write(_:at:)-(Data,_)`` does (and
    /// costs the same time).
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(FlashError) {
        try program(count: bytes.count, at: offset) { $0.write(bytes, at: offset) }
    }

    /// A write of `count` bytes at `offset`: checked, programmed into the contents by `body`
    /// under the lock, its time and the sectors it changed accounted.
    @inline(__always)
    private func program(count: Int, at offset: Int, _ body: (inout NORFlashSectors) -> Void) throws(FlashError) {
        try NORFlashSectors.checkWrite(count: count, at: offset, capacity: capacity)
        try state.withLock { (state: inout State) throws(FlashError) in
            if let failing = state.failing { throw FlashError(failing) }
            body(&state.contents)
            state.bytesWritten += count
            if count != state.lastWriteCount {
                state.lastWriteCount = count
                state.lastWriteCost = timing.writeTime(count).attoseconds
            }
            state.pendingCost += state.lastWriteCost
            state.markChanged(offset..<(offset + count), sectorSize: sectorSize, sectorShift: sectorShift)
            noteChange()
        }
    }

    /// Reads `range`, clamped to the slot; reading costs no time.
    public func read(_ range: Range<Int>) -> Data {
        state.withLock { $0.contents.read(range) }
    }

    /// Visits the bytes of `range`, clamped to the slot, sector by sector without copying them;
    /// costs no time. Runs under the flash's lock, so `body` must not use the flash.
    public func forEachPiece(of range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void) {
        state.withLock { $0.contents.forEachPiece(of: range, body) }
    }

    /// Visits each sector programmed since its last erase, in order: its index (offset /
    /// ``sectorSize``) and its bytes, without copying them; the erased sectors are not visited, so
    /// this costs what was written, not the slot. Costs no time. Runs under the flash's lock, so
    /// `body` must not use the flash.
    public func forEachProgrammedSector(_ body: (_ index: Int, _ bytes: UnsafeRawBufferPointer) -> Void) {
        state.withLock { $0.contents.forEachKeptSector(body) }
    }

    /// Makes every following erase and write fail with `message` (or succeed again with `nil`).
    public func injectFailure(_ message: String?) {
        state.withLock { $0.failing = message }
    }

    /// The whole slot's contents, to keep a simulated device across processes.
    public func snapshot() -> Data {
        read(0..<capacity)
    }

    /// Replaces the slot's contents with a ``snapshot()``.
    ///
    /// - Throws: ``FlashError`` when the snapshot is not exactly ``capacity`` bytes.
    public func restore(_ snapshot: Data) throws(FlashError) {
        replaceContents(with: try NORFlashSectors(capacity: capacity, sectorSize: sectorSize, snapshot: snapshot))
    }

    /// Replaces the slot's contents with `sectors` (by index: offset / ``sectorSize``), every
    /// other sector erased: as ``restore(_:)`` of a snapshot holding them, without making one.
    ///
    /// - Throws: ``FlashError`` for an index outside the slot or a sector of another size.
    public func restore(sectors: [Int: Data]) throws(FlashError) {
        replaceContents(with: try NORFlashSectors(capacity: capacity, sectorSize: sectorSize, sectors: sectors))
    }

    /// The slot's contents replaced by a restore's: what changed before is forgotten (the
    /// restored contents are what the files hold), and the change counted.
    private func replaceContents(with contents: NORFlashSectors) {
        state.withLock {
            $0.contents = contents
            _ = $0.takeChanged()
            noteChange()
        }
    }

    /// The sectors (by index: offset / ``sectorSize``) erased or programmed since the last call
    /// or the last ``restore(_:)``, in order, and forgets them: what a host that keeps the device
    /// across processes writes through.
    public func takeChangedSectors() -> [Int] {
        state.withLock { $0.takeChanged() }
    }

    /// Total bytes programmed since the device was made.
    public var bytesWritten: Int { state.withLock { $0.bytesWritten } }

    /// Folds the time the operations since the last call took into the hosting device's busy
    /// time, from `time` on at the earliest; returns when the device will be idle (times in
    /// attoseconds).
    ///
    /// `floor` is a settling the caller did without the lock, from what the last call returned,
    /// when it knew no operation had come since (so the cost folded in was zero): the busy time
    /// is first raised to it, as that settling would have done, then settled at `time`. The
    /// result is the same as two calls, one at `floor` and one at `time`.
    func settle(attoseconds time: Int128, notBefore floor: Int128? = nil) -> Int128 {
        settleCounting(attoseconds: time, notBefore: floor).busy
    }

    /// ``settle(attoseconds:notBefore:)``, with the count of changes as it left it (``changeCount``
    /// stays there while nothing else touches the flash).
    func settleCounting(attoseconds time: Int128, notBefore floor: Int128?) -> (busy: Int128, changes: UInt64) {
        state.withLock { state in
            if let floor, floor > state.busyUntil { state.busyUntil = floor }
            state.busyUntil = (time > state.busyUntil ? time : state.busyUntil) + state.pendingCost
            state.pendingCost = 0
            return (state.busyUntil, noteChange())
        }
    }

    /// How many times the flash changed (see `changes`), read without the lock.
    var changeCount: UInt64 { changes.load(ordering: .acquiring) }

    /// Counts a change; under the lock. Returns the new count.
    @discardableResult
    private func noteChange() -> UInt64 {
        let count = changes.load(ordering: .relaxed) &+ 1
        changes.store(count, ordering: .releasing)
        return count
    }

    /// Keeps a settling done without the lock (see ``settle(attoseconds:notBefore:)``): the busy time
    /// becomes at least `floor`, and work not folded in yet stays so.
    func raiseBusy(to floor: Int128) {
        state.withLock {
            if floor > $0.busyUntil { $0.busyUntil = floor }
            noteChange()
        }
    }

    /// ``settle(attoseconds:notBefore:)`` in `Duration`s.
    func settle(at time: Duration) -> Duration {
        Duration(attoseconds: settle(attoseconds: time.attoseconds))
    }

    /// The hosting device restarted at `time`: the work it had queued is gone (the time of
    /// operations not folded in yet still counts).
    func resetBusy(to time: Duration) {
        state.withLock {
            $0.busyUntil = time.attoseconds
            noteChange()
        }
    }
}
