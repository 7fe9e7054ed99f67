import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTAProtocolFramed

/// The Swift device model when its flash fails, driven write by write: every failure fails the
/// session with one NAK, at the point the client must know about, and nothing after it.
@Suite struct FramedDeviceModelFlashTests {
    @Test(arguments: [UInt8(1), 2])
    func aFailedChunkWriteFailsTheSessionWithOneNAK(version: UInt8) throws {
        let device = Device(highestVersion: version)
        let image = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        #expect(device.begin(image, batch: 4) == .beginReply(.ok, state: .receiving, offset: 0, batch: 4))
        #expect(device.chunk(image, index: 0, version: version) == nil)
        device.failingFlash.failing = [.erase, .write]
        let runningCRC = CRC32.checksum(image[0..<100])
        #expect(device.chunk(image, index: 1, version: version) == .nak(.flashError, offset: 100, runningCRC: runningCRC))
        #expect(device.chunk(image, index: 2, version: version) == nil, "one NAK, then silence")
        #expect(device.model.sessionState == .failed)
        #expect(device.control(.commit) == .commitReply(.flashError))
        #expect(device.model.counters.naks == 1)
    }

    /// Version 2: a batch whose check fails is rolled back to the last check; when cleaning the
    /// flash after that point fails, the NAK names the last check, not the bytes received since.
    @Test func aFailedRollBackNAKsAtTheLastCheck() throws {
        let device = Device(highestVersion: 2)
        let image = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        _ = device.begin(image, batch: 2)
        #expect(device.chunk(image, index: 0, version: 2) == nil)
        let checked = CRC32.checksum(image[0..<200])
        #expect(device.chunk(image, index: 1, version: 2) == .ack(offset: 200, runningCRC: checked))
        #expect(device.chunk(image, index: 2, version: 2) == nil)
        device.failingFlash.failing = [.erase]
        let corrupt = FramedChunk.encodeCompact(sequence: 3, payload: image[300..<400], batchCRC: 0xDEAD_BEEF)
        #expect(device.write(corrupt) == .nak(.flashError, offset: 200, runningCRC: checked))
        #expect(device.model.sessionState == .failed)
        #expect(device.model.counters == (acks: 1, naks: 1))
    }
}

/// A framed device model on a 16 KiB simulated flash of 4 KiB sectors (the last one the journal),
/// with the notifications it sends collected.
private final class Device: PeripheralContext {
    let model: FramedDeviceModel
    let failingFlash = FailingFlash()
    var flash: any FlashStorage { failingFlash }
    private let notified = Mutex<[Data]>([])
    private let profile = FramedGATTProfile()

    init(highestVersion: UInt8) {
        model = FramedDeviceModel(highestVersion: highestVersion)
        model.connected(self)
    }

    func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }
    func notify(_ value: Data, on characteristic: CharacteristicID) { notified.withLock { $0.append(value) } }
    func reboot(after delay: Duration) {}

    func begin(_ image: Data, batch: UInt16) -> FramedNotification? {
        control(.begin(SessionIdentity(size: UInt32(image.count), crc: CRC32.checksum(image), version: 0), batch: batch, version: model.highestVersion))
    }

    func control(_ command: FramedCommand) -> FramedNotification? {
        #expect(model.write(command.encoded, to: profile.control, kind: .withResponse, peripheral: self) == .success)
        return takeNotification()
    }

    /// Chunk `index` of 100 bytes; in version 2 every second chunk ends a batch with its check.
    func chunk(_ image: Data, index: Int, version: UInt8) -> FramedNotification? {
        let range = (index * 100)..<((index + 1) * 100)
        guard version == 2 else { return write(FramedChunk.encode(offset: range.lowerBound, payload: image[range])) }
        let check = index % 2 == 1 ? CRC32.checksum(image[0..<range.upperBound]) : nil
        return write(FramedChunk.encodeCompact(sequence: index, payload: image[range], batchCRC: check))
    }

    func write(_ value: Data) -> FramedNotification? {
        #expect(model.write(value, to: profile.data, kind: .withoutResponse, peripheral: self) == .success)
        return takeNotification()
    }

    private func takeNotification() -> FramedNotification? {
        let values = notified.withLock { values in
            defer { values.removeAll() }
            return values
        }
        #expect(values.count <= 1, "one notification per write at most")
        return values.first.flatMap(FramedNotification.init(decoding:))
    }
}

/// 16 KiB of NOR flash in 4 KiB sectors (the last one the journal) whose erases, writes or both
/// can be made to fail.
private final class FailingFlash: FlashStorage {
    enum Operation: Hashable, Sendable { case erase, write }

    let capacity = 16_384
    let sectorSize = 4096
    private let state = Mutex((bytes: [UInt8](repeating: 0xFF, count: 16_384), failing: Set<Operation>()))

    /// The operations that fail from now on.
    var failing: Set<Operation> {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    func erase(_ range: Range<Int>) throws(FlashError) {
        try state.withLock { (state: inout (bytes: [UInt8], failing: Set<Operation>)) throws(FlashError) in
            if state.failing.contains(.erase) { throw FlashError("injected erase failure") }
            let sectors = (range.lowerBound / sectorSize * sectorSize)..<((range.upperBound + sectorSize - 1) / sectorSize * sectorSize)
            for index in sectors { state.bytes[index] = 0xFF }
        }
    }

    func write(_ bytes: Data, at offset: Int) throws(FlashError) {
        try state.withLock { (state: inout (bytes: [UInt8], failing: Set<Operation>)) throws(FlashError) in
            if state.failing.contains(.write) { throw FlashError("injected write failure") }
            for (index, byte) in zip(offset..., bytes) { state.bytes[index] &= byte }
        }
    }

    func read(_ range: Range<Int>) -> Data {
        state.withLock { Data($0.bytes[max(0, range.lowerBound)..<min(capacity, range.upperBound)]) }
    }
}
