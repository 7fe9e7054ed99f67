import Foundation
import OTACore

/// The sending side of a framed transfer as a value-type state machine: which chunk to send
/// next, and what an ACK, a NAK or a silence means.
///
/// It keeps `sent − acknowledged` under the window, checks every ACK's running CRC against the
/// image, and rewinds to the device's offset on a NAK or to the last ACK on a timeout. The window
/// adapts: it starts at the most batches allowed (at least two, so waiting for an ACK never idles
/// a clean link), halves on every NAK or timeout (down to one batch, so a lossy link wastes less
/// per loss) and grows by one batch per clean acknowledgement.
///
/// Version 1 chunks carry their offset and CRC; version 2 chunks a sequence number, with a
/// batch check of the image prefix in every batch's last chunk (see ``FramedChunk``).
public struct FramedTransferWindow: Sendable {
    /// What the driver does after an input.
    public enum Outcome: Sendable, Equatable {
        /// Keep going: send what ``nextChunk()`` gives, then wait for notifications.
        case proceed
        /// Every byte is acknowledged: COMMIT.
        case complete
        /// Stop with this error.
        case fail(OTAError)

        /// Equal when the same case; failures when their codes and messages match.
        public static func == (lhs: Outcome, rhs: Outcome) -> Bool {
            switch (lhs, rhs) {
            case (.proceed, .proceed), (.complete, .complete): true
            case (.fail(let left), .fail(let right)): left.code == right.code && left.message == right.message
            default: false
            }
        }
    }

    /// Total image size.
    public let size: Int
    /// Payload bytes per chunk (version 2: of a chunk that does not end a batch).
    public let payloadSize: Int
    /// Chunks per acknowledgement, as the device granted at BEGIN.
    public let batch: Int
    /// The most batches in flight: the window grows back to this after losses.
    public let maximumWindowBatches: Int
    /// Timeouts in a row without progress before the transfer counts as stalled.
    public let maximumSilences: Int
    /// NAKs in a row without the acknowledged offset moving before the transfer fails: a device
    /// that refuses every resend (its check, or a link corrupting each batch) ends the update
    /// instead of looping forever.
    public let maximumNAKsWithoutProgress: Int
    /// The chunk wire format: ``FramedCommand/protocolVersion`` (1) or
    /// ``FramedCommand/compactVersion`` (2).
    public let version: UInt8

    /// Offset of the next byte to send.
    public private(set) var sent: Int
    /// Bytes the device acknowledged.
    public private(set) var acknowledged: Int
    /// Rewinds caused by NAKs.
    public private(set) var naks = 0
    /// Rewinds caused by silence.
    public private(set) var timeouts = 0
    /// Batches allowed in flight now: halved (to at least 1) on every NAK or timeout, one more
    /// after every acknowledgement with no loss since the last, up to ``maximumWindowBatches``.
    public private(set) var windowBatches: Int
    /// The smallest ``windowBatches`` reached, for the transfer's summary.
    public private(set) var smallestWindowBatches: Int
    private var silencesInARow = 0
    private var naksWithoutProgress = 0
    private var lossSinceLastACK = false
    private var acknowledgedCRC: CRC32
    private let image: FirmwareImage
    // Version 2: chunk k after BEGIN carries sequence number k mod 2^15. The split of the image
    // into chunks is a function of (BEGIN offset, payload size, batch) alone, so a resent chunk
    // covers the same bytes under the same number as the first time.
    private var sentIndex = 0
    private var acknowledgedIndex = 0
    // Version 2: the CRC-32 of [0, crcOffset), fed up to each batch end in one call.
    private var crcOffset: Int
    private var crc: CRC32
    // The chunks encoded ahead of being sent (``encodeRun()``).
    private var run = EncodedRun()

    /// Starts at the device's `offset`, whose prefix CRC the device reported as `runningCRC`.
    ///
    /// - Parameters:
    ///   - payloadSize: payload bytes per chunk; in version 2 the write length less the 2-byte
    ///     tag (batch-end chunks carry 4 bytes less, for the batch check), at least 5.
    ///   - windowBatches: the most batches in flight (the window starts there).
    ///   - maximumSilences: timeouts in a row without progress before the transfer stalls.
    ///   - maximumNAKsWithoutProgress: NAKs in a row without the acknowledged offset moving
    ///     before the transfer fails (each NAK resends at least one chunk, so on a lossy link
    ///     that still makes progress this is never reached).
    ///   - version: the chunk format BEGIN negotiated.
    public init(
        image: FirmwareImage,
        payloadSize: Int,
        batch: Int,
        windowBatches: Int,
        startingAt offset: Int,
        maximumSilences: Int = 3,
        maximumNAKsWithoutProgress: Int = 32,
        version: UInt8 = FramedCommand.protocolVersion
    ) throws(OTAError) {
        self.image = image
        size = image.count
        self.version = version
        self.payloadSize = version == FramedCommand.compactVersion ? max(FramedChunk.batchCheckLength + 1, payloadSize) : max(1, payloadSize)
        self.batch = max(1, batch)
        maximumWindowBatches = max(2, windowBatches)
        self.windowBatches = maximumWindowBatches
        smallestWindowBatches = maximumWindowBatches
        self.maximumSilences = maximumSilences
        self.maximumNAKsWithoutProgress = max(1, maximumNAKsWithoutProgress)
        sent = offset
        acknowledged = offset
        acknowledgedCRC = CRC32(continuingFrom: try image.crc32(of: 0..<offset))
        crcOffset = offset
        crc = acknowledgedCRC
    }

    /// Whether every byte is acknowledged.
    public var isComplete: Bool { acknowledged >= size }

    private var isCompact: Bool { version == FramedCommand.compactVersion }

    /// Most bytes sent but not acknowledged, under the current window. Version 2 also keeps
    /// fewer chunks in flight than the sequence numbers can tell apart.
    public var windowBytes: Int {
        guard isCompact else { return windowBatches * batch * payloadSize }
        let batches = min(windowBatches, (Int(FramedChunk.sequenceHorizon) - 1) / batch)
        return max(1, batches) * (batch * payloadSize - FramedChunk.batchCheckLength)
    }

    /// The next chunk to send, or `nil` when the window is full or everything is sent.
    public mutating func nextChunk() throws(OTAError) -> Range<Int>? {
        try nextWrite()?.range
    }

    /// The next chunk to send and its bytes on the wire, or `nil` when the window is full or
    /// everything is sent.
    ///
    /// - Throws: ``OTAError/Code/invalidImage`` when the image's file changed since it was opened.
    public mutating func nextWrite() throws(OTAError) -> (range: Range<Int>, bytes: Data)? {
        guard sent < size, sent - acknowledged < windowBytes else { return nil }
        if !run.starts(at: sent) { try encodeRun() }
        let (chunk, bytes) = run.take()
        sent = chunk.upperBound
        if isCompact { sentIndex += 1 }
        return (chunk, bytes)
    }

    /// Encodes the chunks from ``sent`` to the end of its batch (version 1: the next `batch`
    /// chunks), at most ``EncodedRun/maximumChunks``, into one buffer, read from the image at
    /// once: one allocation per run instead of two per chunk. A chunk is a function of its offset
    /// alone (``EncodedRun/starts(at:)``), so the run stays valid while the window is full; after a
    /// rewind elsewhere, the next write starts a new run.
    private mutating func encodeRun() throws(OTAError) {
        var chunks: [EncodedRun.Chunk] = []
        chunks.reserveCapacity(min(batch, EncodedRun.maximumChunks))
        var offset = sent
        var index = sentIndex
        var total = 0
        if isCompact {
            while offset < size, chunks.count < EncodedRun.maximumChunks {
                let (chunk, batchEnd) = compactChunk(at: offset, index: index)
                total += FramedChunk.compactLength(payload: chunk.count, batchEnd: batchEnd)
                chunks.append(EncodedRun.Chunk(range: chunk, end: total, batchCRC: nil))
                offset = chunk.upperBound
                index += 1
                if batchEnd {
                    // crc is the image's own prefix CRC at crcOffset; after a rewind behind it,
                    // start again from the acknowledged prefix.
                    if crcOffset > chunk.upperBound {
                        crc = acknowledgedCRC
                        crcOffset = acknowledged
                    }
                    try image.forEachWindow(in: crcOffset..<chunk.upperBound) { crc.update($0) }
                    crcOffset = chunk.upperBound
                    chunks[chunks.count - 1].batchCRC = crc.value
                    break
                }
            }
        } else {
            while offset < size, chunks.count < min(batch, EncodedRun.maximumChunks) {
                let chunk = offset..<min(offset + payloadSize, size)
                total += FramedChunk.headerLength + chunk.count
                chunks.append(EncodedRun.Chunk(range: chunk, end: total, batchCRC: nil))
                offset = chunk.upperBound
            }
        }
        let first = chunks[0].range.lowerBound
        let payload = try image[first..<offset]
        var bytes = Data(count: total)
        let compact = isCompact
        let firstIndex = sentIndex
        bytes.withUnsafeMutableBytes { raw in
            payload.withUnsafeBytes { source in
                var position = 0
                for (number, chunk) in chunks.enumerated() {
                    let piece = UnsafeRawBufferPointer(rebasing: source[(chunk.range.lowerBound - first)..<(chunk.range.upperBound - first)])
                    position =
                        compact
                        ? FramedChunk.writeCompact(sequence: firstIndex + number, payload: piece, batchCRC: chunk.batchCRC, into: raw, at: position)
                        : FramedChunk.write(offset: chunk.range.lowerBound, payload: piece, into: raw, at: position)
                }
            }
        }
        run = EncodedRun(bytes: bytes, chunks: chunks)
    }

    /// Version 2: the bytes of chunk `index` (which starts at `offset`) and whether it ends a
    /// batch: every `batch`-th chunk does, and so does the chunk that reaches the image's end.
    private func compactChunk(at offset: Int, index: Int) -> (Range<Int>, batchEnd: Bool) {
        let remaining = size - offset
        let batchEnd = (index + 1) % batch == 0 || remaining <= payloadSize
        let length = batchEnd ? min(payloadSize - FramedChunk.batchCheckLength, remaining) : payloadSize
        return (offset..<(offset + length), batchEnd)
    }

    /// Version 2: the index of the chunk that starts at `offset`, walking the split from the
    /// last acknowledgement; `nil` when no chunk starts there.
    private func compactIndex(of offset: Int) -> Int? {
        var position = acknowledged
        var index = acknowledgedIndex
        while position < offset {
            position = compactChunk(at: position, index: index).0.upperBound
            index += 1
        }
        return position == offset ? index : nil
    }

    /// The device acknowledged `[0, offset)` with CRC-32 `runningCRC`.
    public mutating func receiveACK(offset: Int, runningCRC: UInt32) -> Outcome {
        guard offset <= size else {
            return .fail(OTAError(.malformedResponse, "device acknowledged offset \(offset), past the end of the \(size)-byte image"))
        }
        if isCompact {
            guard offset >= acknowledged, let index = compactIndex(of: offset) else { return misplaced("acknowledged", offset) }
            if let mismatch = advance(to: offset, runningCRC: runningCRC) { return mismatch }
            acknowledgedIndex = index
            if offset > sent {
                sent = offset
                sentIndex = index
            }
        } else {
            if let mismatch = advance(to: offset, runningCRC: runningCRC) { return mismatch }
            if offset > sent { sent = offset }
        }
        if windowBatches < maximumWindowBatches, !lossSinceLastACK { windowBatches += 1 }
        lossSinceLastACK = false
        return isComplete ? .complete : .proceed
    }

    /// The device refused what it got and needs `offset` next. In version 2 the NAK's CRC may
    /// cover bytes no batch check has vouched for yet, so only ACKs are checked against the image.
    public mutating func receiveNAK(_ reason: FramedNotification.NAKReason, offset: Int, runningCRC: UInt32) -> Outcome {
        if reason == .flashError {
            return .fail(OTAError(.deviceRejected, "device reported a flash write failure at byte \(offset); its flash may be worn or protected"))
        }
        guard offset <= size else {
            return .fail(OTAError(.malformedResponse, "device asked for offset \(offset), past the end of the \(size)-byte image"))
        }
        if isCompact {
            guard offset >= acknowledged, let index = compactIndex(of: offset) else { return misplaced("asked for", offset) }
            sentIndex = index
        } else {
            if let mismatch = advance(to: offset, runningCRC: runningCRC) { return mismatch }
        }
        naks += 1
        naksWithoutProgress += 1
        guard naksWithoutProgress <= maximumNAKsWithoutProgress else {
            return .fail(
                OTAError(
                    .deviceRejected,
                    "device refused the data after byte \(acknowledged) of \(size) \(naksWithoutProgress) times in a row (last: \(reason)); the link or the device corrupts every resend: move it closer or restart it, then run the update again (it resumes)"
                )
            )
        }
        sent = offset
        shrink()
        return isComplete ? .complete : .proceed
    }

    /// No ACK or NAK arrived within the ACK timeout while data was in flight.
    public mutating func timedOut() -> Outcome {
        timeouts += 1
        silencesInARow += 1
        guard silencesInARow <= maximumSilences else {
            return .fail(
                OTAError(.stalled, "device sent no acknowledgement \(maximumSilences) times in a row at byte \(acknowledged) of \(size)")
            )
        }
        sent = acknowledged
        sentIndex = acknowledgedIndex
        shrink()
        return .proceed
    }

    /// A loss: halve the batches in flight, to at least one.
    private mutating func shrink() {
        windowBatches = max(1, windowBatches / 2)
        smallestWindowBatches = min(smallestWindowBatches, windowBatches)
        lossSinceLastACK = true
    }

    private func misplaced(_ verb: String, _ offset: Int) -> Outcome {
        .fail(
            OTAError(
                .malformedResponse,
                "device \(verb) byte \(offset), which is no chunk boundary at or after the \(acknowledged) it acknowledged; run the update again"
            )
        )
    }

    private mutating func advance(to offset: Int, runningCRC: UInt32) -> Outcome? {
        do {
            if offset > acknowledged {
                try image.forEachWindow(in: acknowledged..<offset) { acknowledgedCRC.update($0) }
                acknowledged = offset
                silencesInARow = 0
                naksWithoutProgress = 0
            } else if offset < acknowledged {
                // The device went back (it restarted its session): recompute the prefix CRC.
                acknowledgedCRC = CRC32(continuingFrom: try image.crc32(of: 0..<offset))
                acknowledged = offset
            }
        } catch {
            return .fail(error)
        }
        guard acknowledgedCRC.value == runningCRC else {
            return .fail(
                OTAError(
                    .verificationFailed,
                    "device's data up to byte \(offset) has CRC-32 \(Hex.number(runningCRC)), but this image's is \(Hex.number(acknowledgedCRC.value)); run 'ota abort' and update again"
                )
            )
        }
        return nil
    }
}

/// Chunks of one batch encoded into one buffer, handed out in order as slices of it.
private struct EncodedRun: Sendable {
    /// The most chunks encoded at once. A buffer lives until its last chunk is written; small
    /// buffers keep many concurrent updates' memory flat (`--scale 1000`: runs of a whole
    /// 16-chunk batch raised the version-1 row's peak from 446 to 583 MB) and still spread an
    /// allocation over eight writes.
    static let maximumChunks = 8

    struct Chunk: Sendable {
        /// The image bytes the chunk carries.
        var range: Range<Int>
        /// Where its frame ends in ``bytes``.
        var end: Int
        /// Version 2: the batch check, on the batch's last chunk.
        var batchCRC: UInt32?
    }

    var bytes = Data()
    var chunks: [Chunk] = []
    /// The next chunk to hand out.
    var next = 0

    /// Whether the next chunk starts at `offset`. In version 2 the offset also fixes the
    /// chunk's sequence index: the split of the image into chunks depends on the BEGIN offset,
    /// the payload size and the batch alone, all fixed for a window.
    func starts(at offset: Int) -> Bool {
        next < chunks.count && chunks[next].range.lowerBound == offset
    }

    /// The next chunk and its frame.
    mutating func take() -> (Range<Int>, Data) {
        let chunk = chunks[next]
        let start = next == 0 ? 0 : chunks[next - 1].end
        next += 1
        return (chunk.range, bytes[(bytes.startIndex + start)..<(bytes.startIndex + chunk.end)])
    }
}
