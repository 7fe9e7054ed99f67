import Foundation
import OTACore
import Synchronization
import Testing

// MARK: - A scripted link

private let service = GATTUUID("0000fff0-0000-1000-8000-00805f9b34fb")!
private let dataCharacteristic = CharacteristicID(service: service, characteristic: GATTUUID("0000fff1-0000-1000-8000-00805f9b34fb")!)

/// A transport that records what is written and accepts everything.
private final class RecordingTransport: Transport {
    let link: LinkParameters
    let characteristics: [CharacteristicID: CharacteristicProperties] = [dataCharacteristic: [.write, .writeWithoutResponse]]
    let writes = Mutex<[(length: Int, kind: WriteKind)]>([])

    init(link: LinkParameters) { self.link = link }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        let maximum = link.maximumWriteLength(for: kind)
        guard value.count <= maximum else { throw TransportError(.valueTooLong(length: value.count, maximum: maximum), "too long") }
        writes.withLock { $0.append((value.count, kind)) }
    }

    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data { Data() }

    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        AsyncStream { $0.finish() }
    }

    var disconnections: AsyncStream<DisconnectReason> { AsyncStream { _ in } }

    func disconnect() async {}
}

/// Hands out a fresh ``RecordingTransport`` per connection and counts them.
private final class CountingConnector: Connector {
    let link: LinkParameters
    let transports = Mutex<[RecordingTransport]>([])

    init(link: LinkParameters = LinkParameters(attMTU: 517, maximumWriteWithoutResponse: 244, maximumWriteWithResponse: 512)) {
        self.link = link
    }

    var deviceDescription: String { "scripted device" }

    var connections: Int { transports.withLock { $0.count } }

    var allWrites: [(length: Int, kind: WriteKind)] { transports.withLock { $0.flatMap { $0.writes.withLock { $0 } } } }

    func connect() async throws(TransportError) -> any Transport {
        let transport = RecordingTransport(link: link)
        transports.withLock { $0.append(transport) }
        return transport
    }
}

/// Counts runs; each run does what `script` says for its run number (1-based).
private final class Runs: Sendable {
    private let count = Mutex(0)
    let points = Mutex<[Int?]>([])
    let resumePointCalls = Mutex(0)

    func next() -> Int {
        count.withLock {
            $0 += 1; return $0
        }
    }
    var total: Int { count.withLock { $0 } }
}

/// Streams the image with the shape it declares, after `reconnects` runs that ask to reconnect.
private struct StreamingProtocol: UpdateProtocol {
    var dataWrites: DataWriteShape
    var reconnects: Int
    var runs = Runs()

    var requirements: [CharacteristicRequirement] { [CharacteristicRequirement("Data", dataCharacteristic, properties: .write)] }

    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        if runs.next() <= reconnects { return .reconnect(reason: "switching to the next part", after: .zero) }
        context.enter(.transferring)
        try await context.stream(image, range: 0..<image.count, to: dataCharacteristic)
        return .accepted
    }
}

/// A resumable protocol whose checkpoint is the offset the device reported, doubled (so a run can
/// tell it got the point the engine read, not a second read).
private struct CheckpointProtocol: ResumableUpdateProtocol {
    var runs = Runs()
    var script: @Sendable (_ run: Int, _ context: UpdateContext) throws(OTAError) -> UpdateOutcome

    var requirements: [CharacteristicRequirement] { [] }

    func resumePoint(for image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> ResumePoint<Int>? {
        let calls = runs.resumePointCalls.withLock {
            $0 += 1; return $0
        }
        return ResumePoint(offset: calls * 10, detail: "device holds \(calls * 10) bytes", checkpoint: calls * 20)
    }

    func run(_ image: FirmwareImage, resumingFrom point: ResumePoint<Int>?, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        runs.points.withLock { $0.append(point?.checkpoint) }
        return try script(runs.next(), context)
    }
}

/// A protocol that cannot resume; each run does what `script` says for its run number.
private struct ScriptedProtocol: UpdateProtocol {
    var runs = Runs()
    var script: @Sendable (_ run: Int, _ context: UpdateContext) throws(OTAError) -> UpdateOutcome

    var requirements: [CharacteristicRequirement] { [] }

    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        try script(runs.next(), context)
    }
}

private func collect(
    _ image: FirmwareImage,
    _ updateProtocol: any UpdateProtocol,
    connector: CountingConnector,
    configuration: UpdateConfiguration = UpdateConfiguration()
) async -> (Result<UpdateReport, OTAError>, [UpdateEvent]) {
    let (stream, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
    let result: Result<UpdateReport, OTAError>
    do throws(OTAError) {
        result = .success(
            try await UpdateEngine(configuration: configuration, clock: TestClock()).update(image, using: updateProtocol, connector: connector, events: sink))
    } catch {
        result = .failure(error)
    }
    var events: [UpdateEvent] = []
    for await event in stream { events.append(event) }
    return (result, events)
}

private func notes(_ events: [UpdateEvent]) -> [String] {
    events.compactMap { if case .note(let text, _) = $0 { text } else { nil } }
}

private func linkChunkSizes(_ events: [UpdateEvent]) -> [Int] {
    events.compactMap { if case .linkEstablished(_, let chunk, _) = $0 { chunk } else { nil } }
}

private let image = try! FirmwareImage(bytes: Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), name: "test.bin")

// MARK: - Tests

@Suite struct UpdateEngineChunkPlanTests {
    @Test func aProtocolThatWritesWithResponseIsPlannedAndReportedWithTheWithResponseLength() async throws {
        let connector = CountingConnector()
        let shape = DataWriteShape(headerLength: 2, kind: .withResponse)
        let (result, events) = await collect(image, StreamingProtocol(dataWrites: shape, reconnects: 0), connector: connector)
        let report = try result.get()
        #expect(report.chunkSize == 510)  // 512 with response − 2, not 244 without response − 2
        #expect(linkChunkSizes(events) == [510])
        #expect(connector.allWrites.allSatisfy { $0.kind == .withResponse && $0.length <= 510 })
        #expect(connector.allWrites.count == 10)
    }

    /// Without an event sink the recorder skips the clock and the rate estimate per chunk; what
    /// it reports must not change for it.
    @Test func anUpdateWithoutAnEventSinkReportsWhatOneWithASinkReports() async throws {
        let shape = DataWriteShape(headerLength: 2, kind: .withoutResponse)
        let (listened, events) = await collect(image, StreamingProtocol(dataWrites: shape, reconnects: 1), connector: CountingConnector())
        let heard = try listened.get()
        #expect(events.contains { if case .progress = $0 { true } else { false } })
        let unheard = try await UpdateEngine(clock: TestClock()).update(
            image, using: StreamingProtocol(dataWrites: shape, reconnects: 1), connector: CountingConnector())
        #expect(unheard.bytesSent == heard.bytesSent && unheard.bytesSent > 0)
        #expect(unheard.dataWrites == heard.dataWrites && unheard.dataWrites > 0)
        #expect(unheard.chunkSize == heard.chunkSize)
        #expect(unheard.resumes == heard.resumes && unheard.restarts == heard.restarts)
        #expect(unheard.bytesHeldAtStart == heard.bytesHeldAtStart)
    }

    @Test func withoutResponseUsesItsOwnLengthAndTheAlignment() async throws {
        let connector = CountingConnector()
        let (result, events) = await collect(image, StreamingProtocol(dataWrites: DataWriteShape(alignment: 4), reconnects: 0), connector: connector)
        #expect(try result.get().chunkSize == 244)
        #expect(linkChunkSizes(events) == [244])
        #expect(connector.allWrites.allSatisfy { $0.kind == .withoutResponse })
    }

    @Test func maximumChunkSizeCapsThePlanTheWritesAndTheReport() async throws {
        let connector = CountingConnector()
        var configuration = UpdateConfiguration()
        configuration.maximumChunkSize = 102
        let shape = DataWriteShape(alignment: 4)
        let (result, events) = await collect(image, StreamingProtocol(dataWrites: shape, reconnects: 0), connector: connector, configuration: configuration)
        #expect(try result.get().chunkSize == 100)  // capped, then rounded down to the alignment
        #expect(linkChunkSizes(events) == [100])
        #expect(connector.allWrites.map(\.length).max() == 100)
        #expect(connector.allWrites.count == 50)
    }
}

@Suite struct UpdateEngineReconnectTests {
    @Test func aReconnectRequestReconnectsAndRunsAgainWithoutSpendingAResumeAttempt() async throws {
        let connector = CountingConnector()
        let client = StreamingProtocol(dataWrites: DataWriteShape(), reconnects: 2)
        var configuration = UpdateConfiguration()
        configuration.resume = .disabled  // a requested reconnect is not a resume
        let (result, events) = await collect(image, client, connector: connector, configuration: configuration)
        let report = try result.get()
        #expect(report.resumes == 0)
        #expect(connector.connections == 3)
        #expect(client.runs.total == 3)
        #expect(linkChunkSizes(events).count == 3)
        #expect(notes(events).filter { $0 == "reconnecting on the protocol's request: switching to the next part" }.count == 2)
        let states = events.compactMap { if case .state(let state, let detail, _) = $0 { (state, detail) } else { nil } }
        #expect(states.contains { $0.0 == .connecting && $0.1 == "scripted device (switching to the next part)" })
        #expect(!states.contains { $0.0 == .paused || $0.0 == .failed })
    }

    @Test func aDeviceThatAsksToReconnectForeverFailsCleanly() async throws {
        let connector = CountingConnector()
        let client = StreamingProtocol(dataWrites: DataWriteShape(), reconnects: .max)
        let (result, events) = await collect(image, client, connector: connector)
        guard case .failure(let error) = result else {
            Issue.record("expected a failure")
            return
        }
        let limit = ResumePolicy().maximumReconnectRequests
        #expect(error.code == .deviceRejected)
        #expect(error.message.contains("asked to reconnect \(limit + 1) times in a row"))
        #expect(error.message.contains("switching to the next part"))
        #expect(connector.connections == limit + 1)
        #expect(client.runs.total == limit + 1)
        guard case .state(.failed, let detail, _) = events.last else {
            Issue.record("expected a failed state last")
            return
        }
        #expect(detail == error.message)
    }

    @Test func theResumePointIsReadOnceAndHandedToTheRunThatFollows() async throws {
        let connector = CountingConnector()
        let client = CheckpointProtocol { run, _ throws(OTAError) in
            switch run {
            case 1: .reconnect(reason: "restarting", after: .zero)
            case 2: throw OTAError(.disconnected, "link lost")
            default: .accepted
            }
        }
        var configuration = UpdateConfiguration()
        configuration.resume.initialDelay = .zero
        let (result, _) = await collect(image, client, connector: connector, configuration: configuration)
        let report = try result.get()
        #expect(report.resumes == 1)  // the lost link, not the requested reconnect
        #expect(client.runs.resumePointCalls.withLock { $0 } == 2)
        #expect(client.runs.points.withLock { $0 } == [nil, 20, 40])
    }

    @Test func deviceProgressResetsTheAttemptsAndItsLackGivesUp() async throws {
        var configuration = UpdateConfiguration()
        configuration.resume.initialDelay = .zero
        configuration.resume.maximumAttempts = 1
        // Each run takes 500 more bytes, then loses the link: one attempt each is enough.
        let progressing = CheckpointProtocol { run, context throws(OTAError) in
            guard run < 6 else { return .accepted }
            context.acknowledged(total: run * 500)
            throw OTAError(.disconnected, "link lost")
        }
        let (result, _) = await collect(image, progressing, connector: CountingConnector(), configuration: configuration)
        #expect(try result.get().resumes == 5)

        // Without progress the second loss in a row ends it.
        let stuck = CheckpointProtocol { _, context throws(OTAError) in
            context.acknowledged(total: 500)
            throw OTAError(.disconnected, "link lost")
        }
        let (failure, _) = await collect(image, stuck, connector: CountingConnector(), configuration: configuration)
        guard case .failure(let error) = failure else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .disconnected)
        #expect(error.message.hasPrefix("gave up after 1 reconnection attempts without progress"))
        #expect(stuck.runs.total == 2)
    }
}

@Suite struct UpdateEngineRestartTests {
    private var configuration: UpdateConfiguration {
        var configuration = UpdateConfiguration()
        configuration.resume.initialDelay = .zero
        configuration.resume.maximumAttempts = 2
        return configuration
    }

    @Test func aProtocolThatCannotResumeStartsOverAfterALostLink() async throws {
        let client = ScriptedProtocol { run, context throws(OTAError) in
            guard run > 1 else {
                context.acknowledged(total: 1000)
                throw OTAError(.disconnected, "link lost")
            }
            return .accepted
        }
        let connector = CountingConnector()
        let (result, events) = await collect(image, client, connector: connector, configuration: configuration)
        let report = try result.get()
        #expect(report.restarts == 1)
        #expect(report.resumes == 0)
        #expect(connector.connections == 2)
        #expect(
            events.contains { event in
                if case .state(.paused, let detail?, _) = event {
                    detail.hasPrefix("link lost; link lost at byte 0; restarting from byte 0") && detail.hasSuffix("(attempt 1 of 2)")
                } else {
                    false
                }
            })
    }

    /// When the last attempt fails otherwise than the first (a connection that timed out after
    /// links dropped for want of pairing), the line keeps both: the first one's advice is what
    /// the person needs.
    @Test func givingUpKeepsTheFirstAttemptsReasonWhenTheLastDiffers() async throws {
        let client = ScriptedProtocol { run, context throws(OTAError) in
            if run < 3 { throw OTAError(.disconnected, "link lost before any data; pass --pairing first") }
            throw OTAError(.disconnected, "could not connect within 15.0 s")
        }
        let (result, _) = await collect(image, client, connector: CountingConnector(), configuration: configuration)
        guard case .failure(let error) = result else {
            Issue.record("expected a failure")
            return
        }
        #expect(
            error.message
                == "gave up after 2 restarts from byte 0: could not connect within 15.0 s; the first attempt ended: link lost before any data; pass --pairing first"
        )
    }

    @Test func restartsAreBoundedBecauseNoneIsProgress() async throws {
        // Every run gets further before the link drops, but the device keeps none of it.
        let client = ScriptedProtocol { run, context throws(OTAError) in
            context.acknowledged(total: run * 1000)
            throw OTAError(.transport, "bytes lost on the link")
        }
        let (result, _) = await collect(image, client, connector: CountingConnector(), configuration: configuration)
        guard case .failure(let error) = result else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .transport)
        #expect(error.message == "gave up after 2 restarts from byte 0: bytes lost on the link")
        #expect(client.runs.total == 3)
    }

    @Test(arguments: [OTAError.Code.timeout, .stalled, .deviceRejected])
    func aDeviceThatStopsAnsweringOrRefusesIsNotRestarted(code: OTAError.Code) async throws {
        let client = ScriptedProtocol { _, _ throws(OTAError) in throw OTAError(code, "no") }
        let (result, _) = await collect(image, client, connector: CountingConnector(), configuration: configuration)
        #expect(throws: OTAError.self) { try result.get() }
        #expect(client.runs.total == 1)
    }

    @Test func withoutAttemptsALostLinkEndsTheUpdate() async throws {
        var configuration = configuration
        configuration.resume.maximumAttempts = 0
        let client = ScriptedProtocol { _, _ throws(OTAError) in throw OTAError(.disconnected, "link lost") }
        let (result, _) = await collect(image, client, connector: CountingConnector(), configuration: configuration)
        guard case .failure(let error) = result else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.message == "link lost; this protocol cannot resume: run the same command again to start over")
        #expect(client.runs.total == 1)
    }
}
