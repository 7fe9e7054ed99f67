/// Runs an update: connect, check the device, run the protocol, report state and progress.
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
            let transport = try await connect(connector, recorder: recorder)
            do throws(OTAError) {
                let report = try await run(image, using: updateProtocol, over: transport, recorder: recorder)
                await transport.disconnect()
                return report
            } catch {
                await transport.disconnect()
                throw error
            }
        } catch {
            if error.code == .cancelled {
                recorder.enter(.paused, detail: "stopped by the user; the device keeps what it received")
            } else {
                recorder.enter(.failed, detail: error.message)
            }
            throw error
        }
    }

    private func connect(_ connector: any Connector, recorder: EventRecorder) async throws(OTAError) -> any Transport {
        recorder.enter(.connecting, detail: connector.deviceDescription)
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

    private func run(
        _ image: FirmwareImage,
        using updateProtocol: any UpdateProtocol,
        over transport: any Transport,
        recorder: EventRecorder
    ) async throws(OTAError) -> UpdateReport {
        let connectDuration = recorder.elapsed
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
        let plan = try context.chunkPlan()
        recorder.emit(.linkEstablished(transport.link, chunkSize: plan.payloadSize, at: recorder.elapsed))
        try await updateProtocol.run(image, context: context)
        let progress = recorder.progress
        recorder.acknowledged(total: image.count)
        recorder.enter(.completed)
        return UpdateReport(
            imageSize: image.count,
            imageCRC32: image.crc32,
            link: transport.link,
            chunkSize: plan.payloadSize,
            duration: progress.elapsed,
            connectDuration: connectDuration,
            bytesSent: progress.bytesSent
        )
    }
}
