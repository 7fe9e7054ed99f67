import Foundation
import OTACore
import Synchronization

/// The device side of the framed protocol, as specified in docs/protocols/framed.md: checks each
/// chunk's position and CRC, acknowledges per batch after recording the offset in its flash
/// journal, NAKs once per gap or corruption, verifies the whole image before installing, and
/// picks its session up again after a disconnect or a reboot.
///
/// It speaks version 2 (compact chunks: a sequence number per chunk, a CRC-32 of the image
/// prefix per batch) unless made as a version-1 device, which refuses BEGIN for version 2 with
/// status 06 as every version-1 device does.
public final class FramedDeviceModel: DeviceModel {
    /// The largest batch the device grants.
    public static let maximumBatch = 16
    /// Delay between the COMMIT reply and the reboot into the new image.
    public static let rebootDelay: Duration = .milliseconds(300)

    private struct State {
        var booted = false
        var journal: FramedJournal?
        var session: SessionIdentity?
        var state: FramedSessionState = .idle
        var expected = 0
        var runningCRC = CRC32()
        var recordedOffset = 0
        var recordedCRC: UInt32 = 0
        var batch = 1
        var chunksSinceACK = 0
        var nakOutstanding = false
        var erasedUpTo = 0
        var tailMayBeDirty = false
        /// The chunk format BEGIN chose on this connection.
        var version = FramedCommand.protocolVersion
        /// Version 2: the sequence number expected next, and the one at `recordedOffset`.
        var expectedIndex: UInt16 = 0
        var recordedIndex: UInt16 = 0
        var acks = 0
        var naks = 0

        /// A freshly started session for `identity`: nothing received, nothing erased.
        mutating func receiveFromStart(_ identity: SessionIdentity, journal: FramedJournal) {
            self.journal = journal
            session = identity
            state = .receiving
            expected = 0
            runningCRC = CRC32()
            recordedOffset = 0
            recordedCRC = 0
            erasedUpTo = 0
            tailMayBeDirty = false
        }

        /// BEGIN chose `version`; version 2 numbers chunks from 0 at `expected`.
        mutating func startChunks(version: UInt8) {
            self.version = version
            expectedIndex = 0
            recordedIndex = 0
        }
    }

    /// The GATT layout.
    public let profile: FramedGATTProfile
    /// The highest protocol version BEGIN may ask for.
    public let highestVersion: UInt8
    private let state = Mutex(State())

    /// Creates a device speaking protocol versions 1 through `highestVersion` (1 or 2).
    public init(profile: FramedGATTProfile = FramedGATTProfile(), highestVersion: UInt8 = FramedCommand.compactVersion) {
        self.profile = profile
        self.highestVersion = highestVersion
    }

    public var services: [GATTServiceDefinition] { [profile.serviceDefinition] }

    /// ACKs and NAKs sent since the device was made.
    public var counters: (acks: Int, naks: Int) { state.withLock { ($0.acks, $0.naks) } }

    /// The session state.
    public var sessionState: FramedSessionState { state.withLock { $0.state } }

    public func rebooted() {
        state.withLock { $0 = State() }
    }

    public func disconnected() {
        state.withLock { $0.nakOutstanding = false }
    }

    public func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        guard characteristic == profile.status else { return .failure(.readNotPermitted) }
        return .success(
            state.withLock { state in
                boot(&state, flash: peripheral.flash)
                return status(state).encoded
            }
        )
    }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        switch characteristic {
        case profile.data:
            // Read once per chunk: each reading of the context's flash is a witness call and an
            // existential to retain and destroy.
            let flash = peripheral.flash
            let notification: FramedNotification? = state.withLock { state in
                boot(&state, flash: flash)
                return receiveChunk(value, state: &state, flash: flash)
            }
            if let notification { peripheral.notify(notification.encoded, on: profile.control) }
            return .success
        case profile.control:
            guard let (command, version) = FramedCommand.decode(value) else { return .invalidPDU }
            let flash = peripheral.flash
            let (reply, reboot) = state.withLock { state in
                boot(&state, flash: flash)
                return handle(command, version: version, state: &state, flash: flash)
            }
            peripheral.notify(reply.encoded, on: profile.control)
            if reboot { peripheral.reboot(after: Self.rebootDelay) }
            return .success
        default:
            return .writeNotPermitted
        }
    }

    // MARK: - Boot

    private func boot(_ state: inout State, flash: any FlashStorage) {
        guard !state.booted else { return }
        state.booted = true
        var journal = FramedJournal(flash: flash)
        if let recovered = journal.recover(from: flash) {
            state.session = recovered.identity
            state.expected = recovered.offset
            state.runningCRC = CRC32(continuingFrom: recovered.runningCRC)
            state.recordedOffset = recovered.offset
            state.recordedCRC = recovered.runningCRC
            state.state = recovered.installed ? .installed : (recovered.offset == Int(recovered.identity.size) ? .complete : .receiving)
            state.erasedUpTo = roundUp(recovered.offset, flash.sectorSize)
            state.tailMayBeDirty = recovered.offset % flash.sectorSize != 0
        }
        state.journal = journal
    }

    private func status(_ state: State) -> FramedDeviceStatus {
        FramedDeviceStatus(
            state: state.state,
            offset: UInt32(state.recordedOffset),
            runningCRC: state.recordedCRC,
            identity: state.session ?? SessionIdentity(size: 0, crc: 0, version: 0),
            maximumBatch: UInt16(Self.maximumBatch)
        )
    }

    // MARK: - Commands

    private func handle(_ command: FramedCommand, version: UInt8, state: inout State, flash: any FlashStorage) -> (FramedNotification, Bool) {
        switch command {
        case .begin(let identity, let batch, _):
            return (begin(identity, batch: Int(batch), version: version, state: &state, flash: flash), false)
        case .commit:
            return commit(state: &state, flash: flash)
        case .abort:
            do {
                try state.journal?.clear(on: flash)
            } catch {
                return (.abortReply(.flashError), false)
            }
            let journal = state.journal
            state = State()
            state.booted = true
            state.journal = journal
            return (.abortReply(.ok), false)
        }
    }

    private func begin(_ identity: SessionIdentity, batch: Int, version: UInt8, state: inout State, flash: any FlashStorage) -> FramedNotification {
        guard version >= FramedCommand.protocolVersion, version <= highestVersion, identity.size > 0, batch > 0, var journal = state.journal
        else {
            return .beginReply(.invalidParameter, state: state.state, offset: 0, batch: 0)
        }
        guard Int(identity.size) <= journal.imageCapacity else {
            return .beginReply(.tooLarge, state: state.state, offset: 0, batch: 0)
        }
        state.batch = min(batch, Self.maximumBatch)
        state.chunksSinceACK = 0
        state.nakOutstanding = false
        if state.session == identity, state.state != .failed, state.state != .idle {
            if state.state == .installed {
                return .beginReply(.ok, state: .installed, offset: identity.size, batch: UInt16(state.batch))
            }
            do {
                // Version 2 bytes past the last batch check are unverified: drop them.
                if state.version == FramedCommand.compactVersion, state.expected > state.recordedOffset {
                    try rollBack(&state, flash: flash)
                }
                if state.expected > state.recordedOffset {
                    try journal.record(offset: UInt32(state.expected), runningCRC: state.runningCRC.value, identity: identity, on: flash)
                    state.recordedOffset = state.expected
                    state.recordedCRC = state.runningCRC.value
                }
                if state.tailMayBeDirty { try cleanTail(state: &state, flash: flash) }
            } catch {
                state.journal = journal
                state.state = .failed
                return .beginReply(.flashError, state: .failed, offset: 0, batch: 0)
            }
            state.journal = journal
            state.startChunks(version: version)
            return .beginReply(.ok, state: state.state, offset: UInt32(state.expected), batch: UInt16(state.batch))
        }
        do {
            try journal.start(identity, on: flash)
        } catch {
            state.journal = journal
            state.state = .failed
            return .beginReply(.flashError, state: .failed, offset: 0, batch: 0)
        }
        state.receiveFromStart(identity, journal: journal)
        state.startChunks(version: version)
        return .beginReply(.ok, state: .receiving, offset: 0, batch: UInt16(state.batch))
    }

    /// After a reboot, bytes after the durable offset in its sector may be stale: rewrite the
    /// sector's durable prefix on a fresh erase if so.
    private func cleanTail(state: inout State, flash: any FlashStorage) throws(FlashError) {
        state.tailMayBeDirty = false
        let sectorStart = state.expected / flash.sectorSize * flash.sectorSize
        let sectorEnd = sectorStart + flash.sectorSize
        guard flash.read(state.expected..<sectorEnd).contains(where: { $0 != 0xFF }) else { return }
        let prefix = flash.read(sectorStart..<state.expected)
        try flash.erase(sectorStart..<sectorEnd)
        try flash.write(prefix, at: sectorStart)
    }

    /// Version 2: forgets the bytes received after the last batch check (`recordedOffset`) and
    /// makes the flash after it programmable again.
    private func rollBack(_ state: inout State, flash: any FlashStorage) throws(FlashError) {
        state.expected = state.recordedOffset
        state.runningCRC = CRC32(continuingFrom: state.recordedCRC)
        state.expectedIndex = state.recordedIndex
        state.chunksSinceACK = 0
        if state.expected % flash.sectorSize == 0 {
            state.erasedUpTo = state.expected
            state.tailMayBeDirty = false
        } else {
            try cleanTail(state: &state, flash: flash)
            state.erasedUpTo = roundUp(state.expected, flash.sectorSize)
        }
    }

    private func commit(state: inout State, flash: any FlashStorage) -> (FramedNotification, Bool) {
        guard let session = state.session, var journal = state.journal else { return (.commitReply(.badState), false) }
        switch state.state {
        case .failed: return (.commitReply(.flashError), false)
        case .idle: return (.commitReply(.badState), false)
        case .installed: return (.commitReply(.ok), false)
        case .receiving, .complete: break
        }
        guard state.expected == Int(session.size) else { return (.commitReply(.incomplete), false) }
        guard flash.crc32(of: 0..<Int(session.size)) == session.crc else {
            // The data cannot be trusted: the same session starts over at offset 0.
            do {
                try journal.start(session, on: flash)
            } catch {
                state.journal = journal
                state.state = .failed
                return (.commitReply(.flashError), false)
            }
            state.receiveFromStart(session, journal: journal)
            return (.commitReply(.crcMismatch), false)
        }
        do {
            try journal.record(offset: FramedJournal.installedMarker, runningCRC: session.crc, identity: session, on: flash)
        } catch {
            state.journal = journal
            return (.commitReply(.flashError), false)
        }
        state.journal = journal
        state.state = .installed
        state.recordedOffset = Int(session.size)
        state.recordedCRC = session.crc
        return (.commitReply(.ok), true)
    }

    // MARK: - Data

    private func receiveChunk(_ value: Data, state: inout State, flash: any FlashStorage) -> FramedNotification? {
        guard let session = state.session, state.state == .receiving || state.state == .complete else {
            return nak(.outOfSession, state: &state)
        }
        if state.version == FramedCommand.compactVersion { return receiveCompactChunk(value, session: session, state: &state, flash: flash) }
        guard let (offset, crc, payload) = FramedChunk.decode(value), CRC32.checksum(payload) == crc else {
            return nak(.crcMismatch, state: &state)
        }
        let start = Int(offset)
        let end = start + payload.count
        guard end <= Int(session.size) else { return nak(.outOfSession, state: &state) }
        if end <= state.expected { return nil }  // a duplicate, also once complete
        if start > state.expected { return nak(.gap, state: &state) }
        let fresh = payload.suffix(from: payload.startIndex + (state.expected - start))
        do {
            try store(fresh, state: &state, flash: flash)
        } catch {
            return flashFailed(state: &state)
        }
        state.expected = end
        state.nakOutstanding = false
        state.chunksSinceACK += 1
        guard state.chunksSinceACK >= state.batch || end == Int(session.size) else { return nil }
        state.chunksSinceACK = 0
        return checkpoint(session: session, state: &state, flash: flash)
    }

    /// A version-2 chunk: placed at `expected` when its sequence number is the one expected,
    /// written at once, and vouched for by the batch check in the batch's last chunk before it is
    /// recorded and acknowledged.
    private func receiveCompactChunk(_ value: Data, session: SessionIdentity, state: inout State, flash: any FlashStorage) -> FramedNotification? {
        guard let chunk = FramedChunk.decodeCompact(value) else { return nak(.crcMismatch, state: &state) }
        let distance = (chunk.sequence &- state.expectedIndex) & FramedChunk.sequenceMask
        if distance != 0 { return distance < FramedChunk.sequenceHorizon ? nak(.gap, state: &state) : nil }
        let end = state.expected + chunk.payload.count
        guard end <= Int(session.size) else { return nak(.outOfSession, state: &state) }
        // The chunk that completes the image must carry the check of all of it.
        if end == Int(session.size), chunk.batchCRC == nil { return nak(.crcMismatch, state: &state) }
        do {
            try store(chunk.payload, state: &state, flash: flash)
        } catch {
            return flashFailed(state: &state)
        }
        state.expected = end
        state.expectedIndex = (state.expectedIndex &+ 1) & FramedChunk.sequenceMask
        state.nakOutstanding = false
        guard let check = chunk.batchCRC else { return nil }
        guard check == state.runningCRC.value else {
            // Something since the last check was corrupt: back to it, and ask for it again.
            do {
                try rollBack(&state, flash: flash)
            } catch {
                // rollBack went back to the last check before it failed: the NAK names that point.
                return flashFailed(state: &state)
            }
            return nak(.crcMismatch, state: &state)
        }
        return checkpoint(session: session, state: &state, flash: flash)
    }

    /// Writes `bytes` at `expected`, first erasing the sectors they reach that are not erased yet,
    /// and folds them into the running CRC once written (the bytes reached once for both).
    private func store(_ bytes: Data, state: inout State, flash: any FlashStorage) throws(FlashError) {
        let end = state.expected + bytes.count
        while state.erasedUpTo < end {
            try flash.erase(state.erasedUpTo..<(state.erasedUpTo + flash.sectorSize))
            state.erasedUpTo += flash.sectorSize
        }
        let failure = bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> FlashError? in
            do throws(FlashError) {
                try flash.write(raw, at: state.expected)
            } catch {
                return error
            }
            state.runningCRC.update(raw)
            return nil
        }
        if let failure { throw failure }
    }

    /// A flash erase or write failed: the session is failed, and one NAK at `expected` says so
    /// (no other NAK follows until a new BEGIN or connection).
    private func flashFailed(state: inout State) -> FramedNotification {
        state.state = .failed
        state.nakOutstanding = true
        state.naks += 1
        return .nak(.flashError, offset: UInt32(state.expected), runningCRC: state.runningCRC.value)
    }

    /// Every byte before `expected` is in flash and checked: records that point in the journal
    /// as the one to resume from (completing the session at the image's end) and acknowledges it.
    /// A journal that cannot be written fails the session with a NAK at the last recorded point.
    private func checkpoint(session: SessionIdentity, state: inout State, flash: any FlashStorage) -> FramedNotification {
        let end = state.expected
        do {
            try state.journal?.record(offset: UInt32(end), runningCRC: state.runningCRC.value, identity: session, on: flash)
        } catch {
            state.state = .failed
            state.naks += 1
            return .nak(.flashError, offset: UInt32(state.recordedOffset), runningCRC: state.recordedCRC)
        }
        state.recordedOffset = end
        state.recordedCRC = state.runningCRC.value
        // Version 2's sequence number at the recorded point (version 1 keeps both at 0).
        state.recordedIndex = state.expectedIndex
        if end == Int(session.size) { state.state = .complete }
        state.acks += 1
        return .ack(offset: UInt32(end), runningCRC: state.runningCRC.value)
    }

    private func nak(_ reason: FramedNotification.NAKReason, state: inout State) -> FramedNotification? {
        guard !state.nakOutstanding else { return nil }
        state.nakOutstanding = true
        state.naks += 1
        return .nak(reason, offset: UInt32(state.expected), runningCRC: state.runningCRC.value)
    }
}

private func roundUp(_ value: Int, _ multiple: Int) -> Int {
    (value + multiple - 1) / multiple * multiple
}
