/// Runs an update: connect, check the device, plan the chunks, read and check the device's
/// standard services once (``Preflight``), run the protocol, report state and progress,
/// reconnect when the protocol asks for it, and after a lost link reconnect and continue
/// (protocols that can resume) or start over from byte 0 (protocols that cannot).
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
    /// The clock every wait uses: ``RealTimeClock`` unless given another (the simulation's, a
    /// test's).
    public let clock: any Clock<Duration>

    /// Creates an engine.
    public init(configuration: UpdateConfiguration = UpdateConfiguration(), clock: any Clock<Duration> = RealTimeClock()) {
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
    ///
    /// Runs off the caller's actor (`@concurrent`): an app that calls it from the main actor does
    /// not run the image checks and chunking there.
    @concurrent
    public func update(
        _ image: FirmwareImage,
        using updateProtocol: any UpdateProtocol,
        connector: any Connector,
        events: AsyncStream<UpdateEvent>.Continuation? = nil
    ) async throws(OTAError) -> UpdateReport {
        let device = DeviceProgress()
        let recorder = EventRecorder(
            sink: events,
            stopwatch: Stopwatch(clock: clock),
            configuration: configuration,
            totalBytes: image.count,
            device: device
        )
        defer { events?.finish() }
        do throws(OTAError) {
            let step: RunStep
            if let resumable = updateProtocol as? any ResumableUpdateProtocol {
                step = Self.resumingStep(resumable, image: image)
            } else {
                step = { context, _ throws(OTAError) in try await updateProtocol.run(image, context: context) }
            }
            return try await runWithResume(
                image, using: updateProtocol, resumable: updateProtocol is any ResumableUpdateProtocol, step: step,
                connector: connector, recorder: recorder, device: device
            )
        } catch {
            if error.code == .cancelled {
                // What the pause means for the device is the caller's to say once (ota: "the device
                // keeps what it received; run the same command again…").
                recorder.enter(.paused, detail: "stopped by the user")
            } else {
                recorder.enter(.failed, detail: error.message)
            }
            throw error
        }
    }

    /// Tells the device behind `connector` to discard its update session.
    ///
    /// - Returns: what there was to discard, as far as the protocol can tell.
    /// - Throws: ``OTAError/Code/invalidParameter`` when the protocol cannot abort.
    @concurrent
    public func abort(using updateProtocol: any UpdateProtocol, connector: any Connector) async throws(OTAError) -> AbortOutcome {
        guard let abortable = updateProtocol as? any AbortableUpdateProtocol else {
            throw OTAError(.invalidParameter, "this protocol has no abort command")
        }
        let device = DeviceProgress()
        let recorder = EventRecorder(sink: nil, stopwatch: Stopwatch(clock: clock), configuration: configuration, totalBytes: 0, device: device)
        let transport = try await connect(connector, recorder: recorder)
        do throws(OTAError) {
            let context = try prepare(updateProtocol, over: transport, recorder: recorder)
            let outcome = try await abortable.abort(context: context)
            await transport.disconnect()
            return outcome
        } catch {
            await transport.disconnect()
            throw error
        }
    }

    /// Connects through `connector`, gives `body` the protocol's context on that link (its
    /// characteristics checked, the chunk plan made, the engine's timeouts), and disconnects:
    /// for a protocol's commands that are not an update, such as reading or changing the
    /// device's image state. No preflight, no resume: a lost link fails `body`.
    ///
    /// - Throws: what connecting or `body` throws; ``OTAError/Code/missingCharacteristic`` when
    ///   the device lacks what `updateProtocol` requires.
    public func withConnection<R: Sendable>(
        using updateProtocol: any UpdateProtocol, connector: any Connector, _ body: (UpdateContext) async throws(OTAError) -> R
    ) async throws(OTAError) -> R {
        let recorder = EventRecorder(sink: nil, stopwatch: Stopwatch(clock: clock), configuration: configuration, totalBytes: 0, device: DeviceProgress())
        let transport = try await connect(connector, recorder: recorder)
        do throws(OTAError) {
            let context = try prepare(updateProtocol, over: transport, recorder: recorder)
            let result = try await body(context)
            await transport.disconnect()
            return result
        } catch {
            await transport.disconnect()
            throw error
        }
    }

    /// Errors after which a resumable protocol reconnects and continues.
    private static let resumableCodes: Set<OTAError.Code> = [.disconnected, .stalled, .timeout, .connectionFailed, .transport]

    /// Errors after which a protocol that cannot resume reconnects and starts over: a lost link
    /// (or bytes lost on it), not a device that stopped answering, whose next run would end the
    /// same way.
    private static let restartCodes: Set<OTAError.Code> = [.disconnected, .connectionFailed, .transport]

    /// One run of the protocol over a fresh context; `continuing` is true after a reconnection.
    private typealias RunStep = @Sendable (_ context: UpdateContext, _ continuing: Bool) async throws(OTAError) -> UpdateOutcome

    /// Opens the existential so the typed resume point goes from ``ResumableUpdateProtocol/resumePoint(for:context:)``
    /// straight into the run that follows: the device is asked once.
    private static func resumingStep<P: ResumableUpdateProtocol>(_ resumable: P, image: FirmwareImage) -> RunStep {
        { context, continuing throws(OTAError) in
            var point: ResumePoint<P.Checkpoint>?
            if continuing {
                point = try await resumable.resumePoint(for: image, context: context)
                if let point {
                    context.note("resuming: \(point.detail)")
                    context.acknowledged(total: point.offset)
                } else {
                    context.note("the device holds none of this image; starting over")
                    context.acknowledged(total: 0)
                }
            }
            return try await resumable.run(image, resumingFrom: point, context: context)
        }
    }

    private func runWithResume(
        _ image: FirmwareImage,
        using updateProtocol: any UpdateProtocol,
        resumable: Bool,
        step: @escaping RunStep,
        connector: any Connector,
        recorder: EventRecorder,
        device: DeviceProgress
    ) async throws(OTAError) -> UpdateReport {
        let policy = configuration.resume
        let randomness = UpdateRandomness(seed: configuration.randomSeed)
        // After a jump the device may come back elsewhere: every later connection goes there.
        var connector = connector
        var transport: (any Transport)? = try await connect(connector, recorder: recorder)
        var connectDuration = recorder.elapsed
        var preflightDone = false
        var failures = RunsWithoutProgress()
        // The first failure of the current run of attempts without progress: the last may say
        // less (a connection that timed out after links that dropped for want of pairing).
        var firstWithoutProgress: OTAError?
        var requests = RunsWithoutProgress()
        var resumes = 0
        var restarts = 0
        var continuing = false
        while true {
            let outcome: UpdateOutcome
            let link: any Transport
            do throws(OTAError) {
                if transport == nil {
                    if recorder.currentState != .connecting {
                        recorder.enter(.connecting, detail: "\(connector.deviceDescription) (resuming)")
                    }
                    transport = try await connect(connector, recorder: recorder)
                }
                guard let connected = transport else { continue }
                link = connected
                let context = try prepare(
                    updateProtocol, over: link, recorder: recorder, deviceAddress: connector.airAddress, randomness: randomness)
                if !preflightDone {
                    // Once per update, before the protocol's first write; its reads are setup
                    // time, not the protocol's.
                    let preflight = Preflight(policy: configuration.preflight, responseTimeout: configuration.responseTimeout, clock: clock)
                    // The version the device runs, from the protocol when it can ask (before any
                    // image byte, so a downgrade is refused before the first write).
                    var reported: ReportedVersion?
                    if configuration.preflight.firmwareVersion != nil, configuration.preflight.readsStandardServices,
                        let reporting = updateProtocol as? any RunningVersionReporting
                    {
                        reported = try await reporting.runningVersion(context: context)
                    }
                    try await preflight.run(over: link, recorder: recorder, reported: reported)
                    preflightDone = true
                    connectDuration = recorder.elapsed
                }
                let resuming = continuing
                outcome = try await context.withRunTimer { () throws(OTAError) in try await step(context, resuming) }
                if outcome == .accepted {
                    // The update ends with the device's verdict: its duration and the completed
                    // state do not wait for the link to come down (bluetoothd's Device1.Disconnect
                    // takes seconds).
                    let report = finish(
                        image, link: link.link, chunkSize: context.chunkPlan.payloadSize,
                        recorder: recorder, device: device, connectDuration: connectDuration, resumes: resumes, restarts: restarts
                    )
                    await link.disconnect()
                    return report
                }
            } catch {
                if let link = transport { await link.disconnect() }
                transport = nil
                let retried = resumable ? Self.resumableCodes : Self.restartCodes
                guard retried.contains(error.code), policy.maximumAttempts > 0 else {
                    // Nothing picks up where this run stopped: the person has to start it again.
                    // A device that stopped answering is said so too, or the line would end at
                    // "timed out" with nothing to do next.
                    guard !resumable, error.code == .disconnected || error.code == .timeout else { throw error }
                    throw OTAError(
                        error.code, "\(error.message); this protocol cannot resume: run the same command again to start over",
                        underlying: error
                    )
                }
                // A protocol that cannot resume starts over: the device keeps nothing of the run
                // (its START resets the session), so no restart is progress, and the same
                // policy bounds the restarts in a row.
                let attempt = failures.count(acknowledged: resumable ? device.acknowledged : 0)
                if attempt == 1 { firstWithoutProgress = error }
                guard attempt <= policy.maximumAttempts else {
                    let what = resumable ? "reconnection attempts without progress" : "restarts from byte 0"
                    var message = "gave up after \(policy.maximumAttempts) \(what): \(error.message)"
                    if let first = firstWithoutProgress, first.message != error.message {
                        message += "; the first attempt ended: \(first.message)"
                    }
                    throw OTAError(error.code, message, underlying: error)
                }
                let delay = policy.delay(beforeAttempt: attempt)
                if resumable {
                    recorder.enter(
                        .paused,
                        detail: "\(error.message); reconnecting in \(delay.humanReadable) (attempt \(attempt) of \(policy.maximumAttempts))"
                    )
                } else {
                    let lostAt = recorder.progress.position
                    recorder.rewound(to: 0)
                    device.acknowledge(total: 0)
                    recorder.enter(
                        .paused,
                        detail:
                            "\(error.message); link lost at byte \(lostAt); restarting from byte 0 in \(delay.humanReadable) (attempt \(attempt) of \(policy.maximumAttempts))"
                    )
                }
                try await sleep(for: delay, purpose: "waiting to reconnect")
                if resumable { resumes += 1 } else { restarts += 1 }
                continuing = true
                continue
            }
            // The protocol asked for a reconnection: not a failure, not a resume attempt.
            guard case .reconnect(let reason, let after, let expected) = outcome else { continue }
            await link.disconnect()
            transport = nil
            let reconnectRequests = requests.count(acknowledged: device.acknowledged)
            guard reconnectRequests <= policy.maximumReconnectRequests else {
                throw OTAError(
                    .deviceRejected,
                    "the device asked to reconnect \(reconnectRequests) times in a row without taking more data (last: \(reason)); it may be stuck restarting"
                )
            }
            recorder.note("reconnecting on the protocol's request: \(reason)")
            recorder.enter(.connecting, detail: "\(connector.deviceDescription) (\(reason))")
            if after > .zero { try await sleep(for: after, purpose: "waiting to reconnect (\(reason))") }
            if let expected {
                connector = try await reappeared(connector, matching: expected, recorder: recorder)
            }
            continuing = true
        }
    }

    /// The connector to the device where it came back, found by `rule` within
    /// ``UpdateConfiguration/reappearanceTimeout``.
    private func reappeared(
        _ connector: any Connector, matching rule: ReappearanceRule, recorder: EventRecorder
    ) async throws(OTAError)
        -> any Connector
    {
        recorder.note("looking for the device \(rule.description)")
        let window = configuration.reappearanceTimeout
        // (Read before: a connector that follows the device describes where it is now.)
        let before = connector.deviceDescription
        let found = try await connector.reappeared(matching: rule, within: window)
        if found.deviceDescription != before {
            recorder.note("found the device again at \(found.deviceDescription)")
        }
        return found
    }

    private func sleep(for delay: Duration, purpose: String) async throws(OTAError) {
        do {
            try await clock.sleep(for: delay)
        } catch {
            throw OTAError(.cancelled, "cancelled while \(purpose)")
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

    /// Makes the protocol's context (which checks the device's characteristics and plans the
    /// chunks once for this connection) and reports the link.
    private func prepare(
        _ updateProtocol: any UpdateProtocol,
        over transport: any Transport,
        recorder: EventRecorder,
        deviceAddress: String? = nil,
        randomness: UpdateRandomness = UpdateRandomness(seed: nil)
    ) throws(OTAError) -> UpdateContext {
        recorder.enter(.negotiating)
        let context = try UpdateContext(
            for: updateProtocol, over: transport, configuration: configuration, clock: clock, recorder: recorder,
            deviceAddress: deviceAddress, randomness: randomness)
        recorder.emit(.linkEstablished(transport.link, chunkSize: context.chunkPlan.payloadSize, at: recorder.elapsed))
        return context
    }

    private func finish(
        _ image: FirmwareImage,
        link: LinkParameters,
        chunkSize: Int,
        recorder: EventRecorder,
        device: DeviceProgress,
        connectDuration: Duration,
        resumes: Int,
        restarts: Int
    ) -> UpdateReport {
        // What the device held before this run sent anything; all of it when nothing was sent
        // (it already ran the image). Starting part-way is resuming an earlier run's session.
        let held = device.firstDataOffset ?? image.count
        device.acknowledge(total: image.count)
        recorder.flushProgress()
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
            resumes: resumes + (held > 0 && held < image.count ? 1 : 0),
            bytesHeldAtStart: held,
            restarts: restarts,
            dataWrites: recorder.dataWrites,
            transferStart: device.firstDataTime
        )
    }
}

/// Counts the runs in a row that ended without the device taking more data: the count starts
/// over whenever the device holds more than at the previous run. Failed attempts and reconnection
/// requests are each limited this way.
struct RunsWithoutProgress {
    private var runs = 0
    private var acknowledgedAtLastRun = -1

    /// Counts a run after which the device holds `acknowledged` bytes; returns the runs in a row
    /// without progress, this one included.
    mutating func count(acknowledged: Int) -> Int {
        if acknowledged > acknowledgedAtLastRun {
            runs = 0
            acknowledgedAtLastRun = acknowledged
        }
        runs += 1
        return runs
    }
}
