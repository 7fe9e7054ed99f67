import Foundation
import OTACore
import Synchronization

/// A device's update slot in NOR flash: erased bytes read 0xFF, programming ANDs bits in, and
/// every operation costs time that the hosting device accounts.
///
/// Contents survive disconnects and reboots. Faults can be injected: a write or erase that
/// fails, as worn or protected flash does.
public final class SimulatedFlash: FlashStorage, Sendable {
    private struct State {
        var bytes: [UInt8]
        var pendingCost: Duration = .zero
        var failing: String?
        var bytesWritten = 0
        var sectorsErased = 0
    }

    /// Erase and write timing.
    public let timing: FlashTiming
    public let capacity: Int
    public var sectorSize: Int { timing.sectorSize }
    private let state: Mutex<State>

    /// Creates an erased slot of `capacity` bytes.
    public init(capacity: Int, timing: FlashTiming) {
        precondition(capacity > 0 && capacity % timing.sectorSize == 0, "capacity must be whole sectors")
        self.capacity = capacity
        self.timing = timing
        state = Mutex(State(bytes: [UInt8](repeating: 0xFF, count: capacity)))
    }

    public func erase(_ range: Range<Int>) throws(FlashError) {
        let first = range.lowerBound / sectorSize * sectorSize
        let end = min(capacity, (range.upperBound + sectorSize - 1) / sectorSize * sectorSize)
        guard range.lowerBound >= 0, range.upperBound <= capacity else {
            throw FlashError("erase of 0x\(String(range.lowerBound, radix: 16))..<0x\(String(range.upperBound, radix: 16)) is outside the \(capacity)-byte slot")
        }
        try state.withLock { (state: inout State) throws(FlashError) in
            if let failing = state.failing { throw FlashError(failing) }
            for index in first..<end { state.bytes[index] = 0xFF }
            let sectors = (end - first) / sectorSize
            state.sectorsErased += sectors
            state.pendingCost += timing.sectorEraseTime * sectors
        }
    }

    public func write(_ bytes: Data, at offset: Int) throws(FlashError) {
        guard offset >= 0, offset + bytes.count <= capacity else {
            throw FlashError("write of \(bytes.count) bytes at 0x\(String(offset, radix: 16)) is outside the \(capacity)-byte slot")
        }
        try state.withLock { (state: inout State) throws(FlashError) in
            if let failing = state.failing { throw FlashError(failing) }
            var index = offset
            for byte in bytes {
                state.bytes[index] &= byte
                index += 1
            }
            state.bytesWritten += bytes.count
            state.pendingCost += timing.writeTime(bytes.count)
        }
    }

    public func read(_ range: Range<Int>) -> Data {
        state.withLock { Data($0.bytes[range]) }
    }

    /// Makes every following erase and write fail with `message` (or succeed again with `nil`).
    public func injectFailure(_ message: String?) {
        state.withLock { $0.failing = message }
    }

    /// The whole slot's contents, to keep a simulated device across processes.
    public func snapshot() -> Data {
        state.withLock { Data($0.bytes) }
    }

    /// Replaces the slot's contents with a ``snapshot()``.
    ///
    /// - Throws: ``FlashError`` when the snapshot is not exactly ``capacity`` bytes.
    public func restore(_ snapshot: Data) throws(FlashError) {
        guard snapshot.count == capacity else {
            throw FlashError("a \(snapshot.count)-byte snapshot does not fit a \(capacity)-byte slot")
        }
        state.withLock { $0.bytes = [UInt8](snapshot) }
    }

    /// Total bytes programmed since the device was made.
    public var bytesWritten: Int { state.withLock { $0.bytesWritten } }

    /// Returns the time the operations since the last call took, and resets it.
    func takePendingCost() -> Duration {
        state.withLock { state in
            defer { state.pendingCost = .zero }
            return state.pendingCost
        }
    }
}
