/// Runs an update: connect, check the device, run the protocol, report state and progress, and
/// — for protocols that can resume — reconnect and continue after a lost link.
///
/// ```swift
/// let (events, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
/// async let report = UpdateEngine(clock: clock).update(image, using: client, connector: connector, events: sink)
/// for await event in events { render(event) }
/// print(try await report)
/// ```
///
/// Cancel the calling task to stop an update: the engine reports ``UpdateState/paused`` and
/// throws ``OTAError/Code/cancelled``; it never aborts the device's flash on its own.
public struct UpdateEngine: Sendable {
    /// Timeouts and tunables.
    public var configuration: UpdateConfiguration
    /// The clock every wait uses.
    public let clock: any Clock<Duration>

    /// Creates an engine.
    public init(configuration: UpdateConfiguration = UpdateConfiguration(), clock: any Clock<Duration> = ContinuousClock()) {
        self.configuration = configuration
        self.clock = clock
    }

    /// Sends `image` to the device behind `connector` with `updateProtocol`.
    ///
    /// - Parameter events: receives every ``UpdateEvent``; the engine finishes it when the update
    ///   ends, whatever the outcome.
    /// - Returns: a report once the device has accepted the image.
    /// - Throws: ``OTAError``; the last event is then a ``UpdateState/failed`` or
    ///   ``UpdateState/paused`` state naming the cause.
    public func update(
        _ image: FirmwareImage,
        using updateProtocol: any UpdateProtocol,
        connector: any Connector,
        events: AsyncStream<UpdateEvent>.Continuation? = nil
    ) async throws(OTAError) -> UpdateReport {
        let recorder = EventRecorder(
            sink: events,
            stopwatch: Stopwatch(clock: clock),
            configuration: configuration,
            totalBytes: image.count
        )
        defer { events?.finish() }
        do throws(OTAError) {
            return try await runWithResume(image, using: updateProtocol, connector: connector, recorder: recorder)
        } catch {
            if error.code == .cancelled {
                recorder.enter(.paused, detail: "stopped by the user; the device keeps what it received")
            } else {
                recorder.enter(.failed, detail: error.message)
            }
            throw error
        }
    }

    /// Tells the device behind `connector` to discard its update session.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` when the protocol cannot abort.
    public func abort(using updateProtocol: any UpdateProtocol, connector: any Connector) async throws(OTAError) {
        guard let abortable = updateProtocol as? any AbortableUpdateProtocol else {
            throw OTAError(.invalidParameter, "this protocol has no abort command")
        }
        let recorder = EventRecorder(sink: nil, stopwatch: Stopwatch(clock: clock), configuration: configuration, totalBytes: 0)
        let transport = try await connect(connector, recorder: recorder)
        do throws(OTAError) {
            let context = try prepare(updateProtocol, over: transport, recorder: recorder)
            try await abortable.abort(context: context)
            await transport.disconnect()
        } catch {
            await transport.disconnect()
            throw error
        }
    }

    /// Errors after which a resumable protocol reconnects and continues.
    private static let resumableCodes: Set<OTAError.Code> = [.disconnected, .stalled, .timeout, .connectionFailed, .transport]

    private func runWithResume(
        _ image: FirmwareImage,
        using updateProtocol: any UpdateProtocol,
        connector: any Connector,
        recorder: EventRecorder
    ) async throws(OTAError) -> UpdateReport {
        let resumable = updateProtocol as? any ResumableUpdateProtocol
        let policy = configuration.resume
        var transport: (any Transport)? = try await connect(connector, recorder: recorder)
        let connectDuration = recorder.elapsed
        var attempt = 0
        var resumes = 0
        var acknowledgedAtLastAttempt = -1
        while true {
            do throws(OTAError) {
                if transport == nil {
                    recorder.enter(.connecting, detail: "\(connector.deviceDescription) (resuming)")
                    transport = try await connect(connector, recorder: recorder)
                }
                guard let link = transport else { continue }
                let context = try prepare(updateProtocol, over: link, recorder: recorder)
                if resumes > 0, let resumable {
                    if let point = try await resumable.resumePoint(for: image, context: context) {
                        recorder.note("resuming: \(point.detail)")
                        recorder.acknowledged(total: point.offset)
                    } else {
                        recorder.note("the device holds none of this image; starting over")
                        recorder.acknowledged(total: 0)
                    }
                }
                try await updateProtocol.run(image, context: context)
                await link.disconnect()
                return finish(
                    image, link: link.link, chunkSize: try context.chunkPlan(headerLength: updateProtocol.chunkHeaderLength, alignment: updateProtocol.chunkAlignment).payloadSize,
                    recorder: recorder, connectDuration: connectDuration, resumes: resumes
                )
            } catch {
                if let link = transport { await link.disconnect() }
                transport = nil
                guard resumable != nil, Self.resumableCodes.contains(error.code), policy.maximumAttempts > 0 else { throw error }
                let acknowledged = recorder.progress.bytesAcknowledged
                if acknowledged > acknowledgedAtLastAttempt {
                    attempt = 0
                    acknowledgedAtLastAttempt = acknowledged
                }
                attempt += 1
                guard attempt <= policy.maximumAttempts else {
                    throw OTAError(
                        error.code,
                        "gave up after \(policy.maximumAttempts) reconnection attempts without progress: \(error.message)",
                        underlying: error
                    )
                }
                let delay = policy.delay(beforeAttempt: attempt)
                recorder.enter(
                    .paused,
                    detail: "\(error.message); reconnecting in \(delay.humanReadable) (attempt \(attempt) of \(policy.maximumAttempts))"
                )
                do {
                    try await clock.sleep(for: delay)
                } catch {
                    throw OTAError(.cancelled, "cancelled while waiting to reconnect")
                }
                resumes += 1
            }
        }
    }

    private func connect(_ connector: any Connector, recorder: EventRecorder) async throws(OTAError) -> any Transport {
        if recorder.currentState != .connecting {
            recorder.enter(.connecting, detail: connector.deviceDescription)
        }
        let limit = configuration.connectTimeout
        do {
            return try await withTimeout(
                limit,
                clock: clock,
                timeoutError: OTAError(
                    .connectionFailed,
                    "could not connect to \(connector.deviceDescription) within \(limit.humanReadable); is it powered, advertising and in range?"
                )
            ) {
                try await connector.connect()
            }
        } catch {
            throw UpdateContext.describe(error, doing: "connecting to \(connector.deviceDescription)")
        }
    }

    /// Checks the device's characteristics and makes the protocol's context.
    private func prepare(_ updateProtocol: any UpdateProtocol, over transport: any Transport, recorder: EventRecorder) throws(OTAError) -> UpdateContext {
        recorder.enter(.negotiating)
        for requirement in updateProtocol.requirements {
            do {
                try transport.requireCharacteristic(requirement.id, allowing: requirement.properties)
            } catch {
                throw OTAError(
                    .missingCharacteristic,
                    "\(requirement.role): \(error.message); is the device running firmware with this update service?",
                    underlying: error
                )
            }
        }
        let context = UpdateContext(transport: transport, configuration: configuration, clock: clock, recorder: recorder)
        let plan = try context.chunkPlan(headerLength: updateProtocol.chunkHeaderLength, alignment: updateProtocol.chunkAlignment)
        recorder.emit(.linkEstablished(transport.link, chunkSize: plan.payloadSize, at: recorder.elapsed))
        return context
    }

    private func finish(
        _ image: FirmwareImage,
        link: LinkParameters,
        chunkSize: Int,
        recorder: EventRecorder,
        connectDuration: Duration,
        resumes: Int
    ) -> UpdateReport {
        recorder.acknowledged(total: image.count)
        let progress = recorder.progress
        recorder.enter(.completed)
        return UpdateReport(
            imageSize: image.count,
            imageCRC32: image.crc32,
            link: link,
            chunkSize: chunkSize,
            duration: progress.elapsed,
            connectDuration: connectDuration,
            bytesSent: progress.bytesSent,
            resumes: resumes
        )
    }
}
