import Foundation
import Synchronization

/// What the engine gives a protocol while it runs: the transport wrapped with timeouts, chunking
/// from the negotiated MTU, back-pressure, stall detection, progress and state reporting.
///
/// Protocols use these services rather than the raw ``transport`` so that every protocol gets the
/// same behaviour at the edges: the same timeouts, the same error messages, the same events.
public final class UpdateContext: Sendable {
    /// The connected link.
    public let transport: any Transport
    /// The engine's configuration.
    public let configuration: UpdateConfiguration
    /// The engine's clock; protocols sleep on it, never on a clock of their own.
    public let clock: any Clock<Duration>
    let recorder: EventRecorder

    init(transport: any Transport, configuration: UpdateConfiguration, clock: any Clock<Duration>, recorder: EventRecorder) {
        self.transport = transport
        self.configuration = configuration
        self.clock = clock
        self.recorder = recorder
    }

    // MARK: - Reporting

    /// Reports a phase change (transferring, verifying, committing).
    public func enter(_ state: UpdateState, detail: String? = nil) {
        recorder.enter(state, detail: detail)
    }

    /// Records that the device has confirmed `total` bytes of the image.
    public func acknowledged(total: Int) {
        recorder.acknowledged(total: total)
    }

    /// Adds a line to the verbose log.
    public func note(_ text: String) {
        recorder.note(text)
    }

    // MARK: - Chunking

    /// Plans chunks for writes of `kind` from the negotiated maximum write length and the
    /// configured cap.
    public func chunkPlan(for kind: WriteKind = .withoutResponse, headerLength: Int = 0, alignment: Int = 1) throws(OTAError) -> ChunkPlan {
        try ChunkPlan(
            maximumWriteLength: transport.link.maximumWriteLength(for: kind),
            headerLength: headerLength,
            alignment: alignment,
            cap: configuration.maximumChunkSize
        )
    }

    // MARK: - Commands

    /// Writes a command. A write with response waits at most the response timeout for the
    /// device's ATT response.
    ///
    /// - Parameter purpose: what the write is ("START"), for error messages.
    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, purpose: String) async throws(OTAError) {
        let transport = self.transport
        do {
            switch kind {
            case .withoutResponse:
                try await transport.write(value, to: characteristic, kind: kind)
            case .withResponse:
                let limit = configuration.responseTimeout
                try await withTimeout(
                    limit,
                    clock: clock,
                    timeoutError: OTAError(.timeout, "timed out after \(limit.humanReadable) waiting for the device to acknowledge \(purpose)")
                ) {
                    try await transport.write(value, to: characteristic, kind: kind)
                }
            }
        } catch {
            throw Self.describe(error, doing: "writing \(purpose)")
        }
    }

    /// Reads a characteristic, waiting at most the response timeout.
    public func read(_ characteristic: CharacteristicID, purpose: String) async throws(OTAError) -> Data {
        let transport = self.transport
        let limit = configuration.responseTimeout
        do {
            return try await withTimeout(
                limit,
                clock: clock,
                timeoutError: OTAError(.timeout, "timed out after \(limit.humanReadable) reading \(purpose)")
            ) {
                try await transport.read(characteristic)
            }
        } catch {
            throw Self.describe(error, doing: "reading \(purpose)")
        }
    }

    /// Enables notifications on `characteristic` for the duration of `body`.
    public func withNotifications<R>(
        from characteristic: CharacteristicID,
        _ body: (NotificationInbox) async throws(OTAError) -> R
    ) async throws(OTAError) -> R {
        let stream: AsyncStream<Data>
        do {
            stream = try await transport.notifications(from: characteristic)
        } catch {
            throw Self.describe(error, doing: "enabling notifications on \(characteristic.characteristic)")
        }
        let inbox = NotificationInbox(characteristic: characteristic, clock: clock, defaultTimeout: configuration.responseTimeout)
        do {
            return try await withThrowingTaskGroup(of: Void.self, returning: R.self) { group in
                group.addTask {
                    for await value in stream { inbox.deliver(value) }
                    inbox.close()
                }
                defer { group.cancelAll() }
                return try await body(inbox)
            }
        } catch {
            throw Self.describe(error, doing: "updating")
        }
    }

    // MARK: - Streaming

    /// Writes one data chunk and records that `range` of the image was sent. For protocols that
    /// run their own transfer loop inside ``withStallWatchdog(_:)``.
    ///
    /// Without response (the default) the write goes through the transport's back-pressure; with
    /// response it waits for the device's acknowledgement, at most the response timeout.
    public func writeData(
        _ value: Data,
        to characteristic: CharacteristicID,
        covering range: Range<Int>,
        kind: WriteKind = .withoutResponse
    ) async throws(OTAError) {
        switch kind {
        case .withoutResponse:
            do {
                try await transport.write(value, to: characteristic, kind: kind)
            } catch {
                throw Self.describe(error, doing: "sending data at byte \(range.lowerBound)")
            }
        case .withResponse:
            try await write(value, to: characteristic, kind: kind, purpose: "data at byte \(range.lowerBound)")
        }
        recorder.sent(range)
    }

    /// Records that the transfer moved back to `offset` (after a NAK, a timeout or a resume).
    public func rewound(to offset: Int) {
        recorder.rewound(to: offset)
    }

    /// Runs `body` while a watchdog checks that data keeps flowing: if no data write completes
    /// during a whole ``UpdateConfiguration/stallTimeout``, `body` is cancelled and the call fails
    /// with ``OTAError/Code/stalled``.
    public func withStallWatchdog<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) async throws(OTAError) -> R {
        let recorder = self.recorder
        let stallTimeout = configuration.stallTimeout
        let clock = self.clock
        do {
            return try await withThrowingTaskGroup(of: R?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    var seen = -1
                    while true {
                        try await clock.sleep(for: stallTimeout)
                        let writes = recorder.writeCount
                        if writes == seen {
                            let progress = recorder.progress
                            throw OTAError(
                                .stalled,
                                "no data accepted by the link for \(stallTimeout.humanReadable) at byte \(progress.position) of \(progress.totalBytes); the device stopped taking data"
                            )
                        }
                        seen = writes
                    }
                }
                defer { group.cancelAll() }
                // The body finishing first ends the watchdog; the watchdog throwing ends the body.
                guard let first = try await group.next(), let result = first else {
                    throw OTAError(.internal, "stall watchdog ended without a result")
                }
                return result
            }
        } catch {
            throw Self.describe(error, doing: "sending data")
        }
    }

    /// Streams `range` of `image` to `characteristic` with writes without response, one chunk
    /// per write as planned by `plan`, honouring the transport's back-pressure, under the stall
    /// watchdog.
    ///
    /// `frame` turns each chunk into the bytes written (for protocols with a per-chunk header);
    /// by default the chunk is written as is, without copying.
    ///
    /// - Throws: ``OTAError/Code/stalled`` when the link takes no write for the stall timeout;
    ///   ``OTAError/Code/disconnected`` when the link drops.
    public func stream(
        _ image: FirmwareImage,
        range: Range<Int>,
        to characteristic: CharacteristicID,
        plan: ChunkPlan,
        frame: (@Sendable (_ offset: Int, _ chunk: Data) -> Data)? = nil
    ) async throws(OTAError) {
        try await withStallWatchdog { [self] in
            var offset = range.lowerBound
            while offset < range.upperBound {
                let chunk = plan.chunk(at: offset, in: range.upperBound)
                let payload = image[chunk]
                try await writeData(frame?(offset, payload) ?? payload, to: characteristic, covering: chunk)
                offset = chunk.upperBound
            }
        }
        recorder.flushProgress()
    }

    static func describe(_ error: any Error, doing activity: String) -> OTAError {
        if Task.isCancelled, !(error is OTAError) {
            return OTAError(.cancelled, "cancelled while \(activity)")
        }
        return OTAError.wrapping(error, context: activity)
    }
}
