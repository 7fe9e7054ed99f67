import Foundation
import OTACore

/// The sending side of a framed transfer as a value-type state machine: which chunk to send
/// next, and what an ACK, a NAK or a silence means.
///
/// It keeps `sent − acknowledged` under the window (at least two batches, so waiting for an ACK
/// never idles the link), checks every ACK's running CRC against the image, and rewinds to the
/// device's offset on a NAK or to the last ACK on a timeout.
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
    /// Payload bytes per chunk.
    public let payloadSize: Int
    /// Most bytes sent but not acknowledged.
    public let windowBytes: Int
    /// Timeouts in a row without progress before the transfer counts as stalled.
    public let maximumSilences: Int

    /// Offset of the next byte to send.
    public private(set) var sent: Int
    /// Bytes the device acknowledged.
    public private(set) var acknowledged: Int
    /// Rewinds caused by NAKs.
    public private(set) var naks = 0
    /// Rewinds caused by silence.
    public private(set) var timeouts = 0
    private var silencesInARow = 0
    private var acknowledgedCRC: CRC32
    private let image: FirmwareImage

    /// Starts at the device's `offset`, whose prefix CRC the device reported as `runningCRC`.
    public init(
        image: FirmwareImage,
        payloadSize: Int,
        batch: Int,
        windowBatches: Int,
        startingAt offset: Int,
        maximumSilences: Int = 3
    ) {
        self.image = image
        size = image.count
        self.payloadSize = payloadSize
        windowBytes = max(2, windowBatches) * max(1, batch) * payloadSize
        self.maximumSilences = maximumSilences
        sent = offset
        acknowledged = offset
        acknowledgedCRC = CRC32()
        acknowledgedCRC.update(image.bytes[0..<offset])
    }

    /// Whether every byte is acknowledged.
    public var isComplete: Bool { acknowledged >= size }

    /// The next chunk to send, or `nil` when the window is full or everything is sent.
    public mutating func nextChunk() -> Range<Int>? {
        guard sent < size, sent - acknowledged < windowBytes else { return nil }
        let chunk = sent..<min(sent + payloadSize, size)
        sent = chunk.upperBound
        return chunk
    }

    /// The device acknowledged `[0, offset)` with CRC-32 `runningCRC`.
    public mutating func receiveACK(offset: Int, runningCRC: UInt32) -> Outcome {
        guard offset <= size else {
            return .fail(OTAError(.malformedResponse, "device acknowledged offset \(offset), past the end of the \(size)-byte image"))
        }
        if let mismatch = advance(to: offset, runningCRC: runningCRC) { return mismatch }
        if offset > sent { sent = offset }
        return isComplete ? .complete : .proceed
    }

    /// The device refused what it got and needs `offset` next.
    public mutating func receiveNAK(_ reason: FramedNotification.NAKReason, offset: Int, runningCRC: UInt32) -> Outcome {
        if reason == .flashError {
            return .fail(OTAError(.deviceRejected, "device reported a flash write failure at byte \(offset); its flash may be worn or protected"))
        }
        guard offset <= size else {
            return .fail(OTAError(.malformedResponse, "device asked for offset \(offset), past the end of the \(size)-byte image"))
        }
        if let mismatch = advance(to: offset, runningCRC: runningCRC) { return mismatch }
        naks += 1
        sent = offset
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
        return .proceed
    }

    private mutating func advance(to offset: Int, runningCRC: UInt32) -> Outcome? {
        if offset > acknowledged {
            acknowledgedCRC.update(image.bytes[acknowledged..<offset])
            acknowledged = offset
            silencesInARow = 0
        } else if offset < acknowledged {
            // The device went back (it restarted its session): recompute the prefix CRC.
            acknowledgedCRC = CRC32()
            acknowledgedCRC.update(image.bytes[0..<offset])
            acknowledged = offset
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
