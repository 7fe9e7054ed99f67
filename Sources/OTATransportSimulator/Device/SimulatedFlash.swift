import Foundation
import OTACore
import Synchronization

/// A device's update slot in NOR flash: the one model, ``NORFlash`` (erased bytes read 0xFF,
/// programming ANDs bits in, erases and writes outside the slot throw, reads are clamped to it),
/// with every operation costing time that the hosting device accounts.
///
/// Contents survive disconnects and reboots, and processes through ``snapshot()`` and
/// ``restore(_:)``. Faults can be injected: a write or erase that fails, as worn or protected
/// flash does.
public final class SimulatedFlash: FlashStorage, Sendable {
    private struct State {
        var pendingCost: Duration = .zero
        /// When the hosting device finishes the work folded in so far (``settle(at:)``): kept
        /// with the cost so that settling takes one lock.
        var busyUntil: Duration = .zero
        var failing: String?
        var bytesWritten = 0
        var sectorsErased = 0
        /// The sectors erased or programmed since the last ``takeChangedSectors()``, one bit each
        /// (a 12 MiB slot of 4 KiB sectors takes 48 words): marking one per write hashes nothing.
        var changedSectors: [UInt64]

        mutating func markChanged(_ range: Range<Int>, sectorSize: Int) {
            guard !range.isEmpty else { return }
            for sector in (range.lowerBound / sectorSize)...((range.upperBound - 1) / sectorSize) {
                changedSectors[sector >> 6] |= 1 << UInt64(sector & 63)
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
    public var capacity: Int { flash.capacity }
    public var sectorSize: Int { flash.sectorSize }
    private let flash: NORFlash
    private let state: Mutex<State>

    /// Creates an erased slot of `capacity` bytes.
    public init(capacity: Int, timing: FlashTiming) {
        precondition(capacity > 0 && capacity % timing.sectorSize == 0, "capacity must be whole sectors")
        self.timing = timing
        flash = NORFlash(capacity: capacity, sectorSize: timing.sectorSize)
        let sectors = capacity / timing.sectorSize
        state = Mutex(State(changedSectors: [UInt64](repeating: 0, count: (sectors + 63) / 64)))
    }

    public func erase(_ range: Range<Int>) throws(FlashError) {
        try flash.checkErase(range)
        try state.withLock { (state: inout State) throws(FlashError) in
            if let failing = state.failing { throw FlashError(failing) }
            try flash.erase(range)
            let sectors = flash.sectors(covering: range).count / sectorSize
            state.sectorsErased += sectors
            state.pendingCost += timing.sectorEraseTime * sectors
            state.markChanged(range, sectorSize: sectorSize)
        }
    }

    public func write(_ bytes: Data, at offset: Int) throws(FlashError) {
        try flash.checkWrite(count: bytes.count, at: offset)
        try state.withLock { (state: inout State) throws(FlashError) in
            if let failing = state.failing { throw FlashError(failing) }
            try flash.write(bytes, at: offset)
            state.bytesWritten += bytes.count
            state.pendingCost += timing.writeTime(bytes.count)
            state.markChanged(offset..<(offset + bytes.count), sectorSize: sectorSize)
        }
    }

    /// Reads `range`, clamped to the slot; reading costs no time.
    public func read(_ range: Range<Int>) -> Data {
        flash.read(range)
    }

    /// Visits the bytes of `range`, clamped to the slot, sector by sector without copying them;
    /// costs no time.
    public func forEachPiece(of range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void) {
        flash.forEachPiece(of: range, body)
    }

    /// Makes every following erase and write fail with `message` (or succeed again with `nil`).
    public func injectFailure(_ message: String?) {
        state.withLock { $0.failing = message }
    }

    /// The whole slot's contents, to keep a simulated device across processes.
    public func snapshot() -> Data {
        flash.snapshot()
    }

    /// Replaces the slot's contents with a ``snapshot()``.
    ///
    /// - Throws: ``FlashError`` when the snapshot is not exactly ``capacity`` bytes.
    public func restore(_ snapshot: Data) throws(FlashError) {
        try flash.restore(snapshot)
        state.withLock { _ = $0.takeChanged() }
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
    /// time, from `time` on at the earliest; returns when the device will be idle.
    func settle(at time: Duration) -> Duration {
        state.withLock { state in
            state.busyUntil = max(state.busyUntil, time) + state.pendingCost
            state.pendingCost = .zero
            return state.busyUntil
        }
    }

    /// The hosting device restarted at `time`: the work it had queued is gone (the time of
    /// operations not folded in yet still counts).
    func resetBusy(to time: Duration) {
        state.withLock { $0.busyUntil = time }
    }
}
