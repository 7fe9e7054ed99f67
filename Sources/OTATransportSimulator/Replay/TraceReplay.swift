import Foundation
import OTACore
import Synchronization

/// A device that replays a recorded update (``Trace``): it answers each operation the client
/// performs with what the recorded device answered, after the recorded delay, and sends the
/// recorded notifications and lost links at their recorded times — so a field failure runs
/// again, deterministically, on a virtual clock.
///
/// Every operation is checked against the recording: the same kind, characteristic, length and
/// CRC-32 (and bytes, where both have them), in the same order. The first operation that differs
/// fails with a message naming the line of the trace, and ``divergence`` keeps it; operations
/// the recording has but the client never made are counted in ``unplayed``.
public final class TraceReplay: Sendable {
    /// The recording.
    public let trace: Trace
    /// A name for messages (the file).
    public let name: String
    private let clock: any Clock<Duration>
    private let executor: (any TaskExecutor)?
    /// Indices into `trace.records` of the operations the client performed, in order.
    private let operations: [Int]

    private struct State {
        var next = 0
        var divergence: String?
        var connection: ReplayTransport?
        var writes: [TraceRecord] = []
    }

    private let state = Mutex(State())

    /// A replay of `trace`, timed on `clock`, its deliveries run on `executor`.
    public init(_ trace: Trace, name: String, clock: any Clock<Duration>, executor: (any TaskExecutor)?) {
        self.trace = trace
        self.name = name
        self.clock = clock
        self.executor = executor
        operations = trace.records.indices.filter { trace.records[$0].op.isClientOperation }
    }

    /// The connector the client uses.
    public var connector: any Connector { ReplayConnector(replay: self) }

    /// The first operation that differed from the recording, as a sentence; `nil` so far.
    public var divergence: String? { state.withLock { $0.divergence } }

    /// Recorded operations the client has not performed (yet).
    public var unplayed: Int { state.withLock { operations.count - $0.next } }

    /// The writes the client made that matched the recording, in order.
    public var playedWrites: [TraceRecord] { state.withLock { $0.writes } }

    /// Whether the client did what the recording says, all of it.
    public var verdict: String? {
        if let divergence { return divergence }
        let left = unplayed
        guard left > 0 else { return nil }
        let line = operations[operations.count - left]
        return
            "the client stopped before \(left) recorded operation\(left == 1 ? "" : "s") (the first at line \(line + 2): \(Self.describe(trace.records[line])))"
    }

    // MARK: - Playing one operation

    /// What the client asked for.
    struct Request {
        var op: TraceRecord.Operation
        var characteristic: CharacteristicID?
        var kind: WriteKind?
        var value: Data?
    }

    /// Matches a client operation against the next recorded one, schedules what the device did
    /// after it, and returns the recorded result and its delay.
    func play(_ request: Request) throws(TransportError) -> (result: TraceRecord?, delay: Duration) {
        let played: Result<(Int, TraceRecord?), TransportError> = state.withLock { state in
            if let divergence = state.divergence { return .failure(TransportError(.other, "replay of \(name) stopped: \(divergence)")) }
            guard state.next < operations.count else {
                let divergence = "the client went on after the recording's last operation, with \(Self.describe(request))"
                state.divergence = divergence
                return .failure(TransportError(.other, "replay of \(name): \(divergence)"))
            }
            let index = operations[state.next]
            let recorded = trace.records[index]
            if let mismatch = Self.mismatch(recorded, request) {
                let divergence = "line \(index + 2) recorded \(Self.describe(recorded)), but the client made \(mismatch)"
                state.divergence = divergence
                return .failure(TransportError(.other, "replay of \(name) diverged: \(divergence)"))
            }
            state.next += 1
            if recorded.op == .write { state.writes.append(recorded) }
            let result = trace.records[(index + 1)...].first { $0.seq == recorded.seq && $0.op.isResult }
            return .success((index, result))
        }
        let (index, result) = try played.get()
        let recorded = trace.records[index]
        scheduleEvents(after: index)
        let delay = result.map { Self.duration($0.time - recorded.time) } ?? .zero
        return (result, delay)
    }

    /// Schedules the notifications and lost links recorded between operation `index` and the
    /// next operation, at their recorded delays.
    private func scheduleEvents(after index: Int) {
        let anchor = trace.records[index].time
        var events: [TraceRecord] = []
        for record in trace.records[(index + 1)...] {
            if record.op.isClientOperation { break }
            if record.op == .notify || record.op == .disconnected { events.append(record) }
        }
        guard !events.isEmpty else { return }
        let clock = clock
        Task(executorPreference: executor) { [weak self] in
            var elapsed = 0.0
            for event in events {
                let wait = event.time - anchor - elapsed
                if wait > 0 { try? await clock.sleep(for: Self.duration(wait)) }
                elapsed = max(elapsed, event.time - anchor)
                self?.deliver(event)
            }
        }
    }

    private func deliver(_ event: TraceRecord) {
        guard let connection = state.withLock({ $0.connection }) else { return }
        switch event.op {
        case .notify:
            guard let id = event.characteristicID, let bytes = event.data.flatMap(Hex.decode) else { return }
            connection.notify(Data(bytes), from: id)
        case .disconnected:
            connection.drop(DisconnectReason(event.error?.message ?? "link lost", isLocal: event.error?.local ?? false))
        default:
            break
        }
    }

    /// Waits the recorded delay, then returns or throws the recorded result.
    func complete(_ request: Request) async throws(TransportError) -> TraceRecord? {
        let (result, delay) = try play(request)
        if delay > .zero {
            do { try await clock.sleep(for: delay) } catch { throw TransportError(.other, "cancelled during a replay") }
        }
        if let result, result.op == .failed, let error = result.error { throw error.transportError }
        return result
    }

    func opened(_ connection: ReplayTransport) {
        state.withLock { state in
            state.connection?.drop(.closedByApp)
            state.connection = connection
        }
    }

    // MARK: - Describing and comparing

    static func duration(_ seconds: Double) -> Duration {
        .nanoseconds(Int64((max(0, seconds) * 1e9).rounded()))
    }

    static func mismatch(_ recorded: TraceRecord, _ request: Request) -> String? {
        guard recorded.op == request.op else { return describe(request) }
        if let id = request.characteristic, recorded.characteristicID != id { return describe(request) }
        guard recorded.op == .write, let value = request.value else { return nil }
        let kind = request.kind == .withResponse ? "request" : "command"
        let crc = Hex.number(CRC32.checksum(value), digits: 8)
        if recorded.kind != kind || recorded.length != value.count || recorded.crc32 != crc {
            return describe(request)
        }
        if let data = recorded.data, data != Hex.bytes(value) { return describe(request) }
        return nil
    }

    static func describe(_ record: TraceRecord) -> String {
        switch record.op {
        case .write:
            "a \(record.kind == "request" ? "write with response" : "write without response") of \(record.length ?? 0) bytes (CRC-32 \(record.crc32 ?? "?")) to \(record.characteristic ?? "?")"
        case .read, .subscribe: "a \(record.op == .read ? "read" : "subscription") of \(record.characteristic ?? "?")"
        default: "a \(record.op.rawValue)"
        }
    }

    static func describe(_ request: Request) -> String {
        var record = TraceRecord(time: 0, op: request.op)
        record.characteristic = request.characteristic.map { "\($0.characteristic)" }
        if let value = request.value {
            record.kind = request.kind == .withResponse ? "request" : "command"
            record.length = value.count
            record.crc32 = Hex.number(CRC32.checksum(value), digits: 8)
        }
        return describe(record)
    }
}

extension TraceRecord.Operation {
    /// Whether the client performs it (rather than the device, or the tool).
    var isClientOperation: Bool { [.connect, .subscribe, .write, .read, .disconnect].contains(self) }
    /// Whether it is the result of a client operation.
    var isResult: Bool { [.done, .failed, .connected].contains(self) }
}

extension TraceRecord {
    /// The characteristic the record names.
    var characteristicID: CharacteristicID? {
        guard let service = service.flatMap(GATTUUID.init), let characteristic = characteristic.flatMap(GATTUUID.init) else { return nil }
        return CharacteristicID(service: service, characteristic: characteristic)
    }
}

/// Connects to a replayed device.
struct ReplayConnector: Connector {
    let replay: TraceReplay

    var deviceDescription: String { "a replay of \(replay.name)" }

    func connect() async throws(TransportError) -> any Transport {
        let result = try await replay.complete(TraceReplay.Request(op: .connect))
        guard let result, result.op == .connected, let link = result.link else {
            throw TransportError(.connectionFailed, "replay of \(replay.name): the recording has no connection here")
        }
        var characteristics: [CharacteristicID: CharacteristicProperties] = [:]
        for item in result.characteristics ?? [] {
            guard let service = GATTUUID(item.service), let characteristic = GATTUUID(item.characteristic) else { continue }
            characteristics[CharacteristicID(service: service, characteristic: characteristic)] = CharacteristicProperties(
                rawValue: UInt8(clamping: item.properties))
        }
        let transport = ReplayTransport(replay: replay, link: link.parameters, characteristics: characteristics)
        replay.opened(transport)
        return transport
    }
}

/// One replayed connection.
final class ReplayTransport: Transport {
    let replay: TraceReplay
    let link: LinkParameters
    let characteristics: [CharacteristicID: CharacteristicProperties]

    private struct State {
        var subscribers: [CharacteristicID: AsyncStream<Data>.Continuation] = [:]
        /// The watchers of ``disconnections``, and why the link went down.
        var watchers = DisconnectionWatchers()
        var down: DisconnectReason? { watchers.reason }
    }

    private let state = Mutex(State())

    init(replay: TraceReplay, link: LinkParameters, characteristics: [CharacteristicID: CharacteristicProperties]) {
        self.replay = replay
        self.link = link
        self.characteristics = characteristics
    }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        _ = try await replay.complete(.init(op: .write, characteristic: characteristic, kind: kind, value: value))
    }

    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        let result = try await replay.complete(.init(op: .read, characteristic: characteristic))
        guard let bytes = result?.data.flatMap(Hex.decode) else {
            throw TransportError(.other, "replay of \(replay.name): the recording has no value for this read")
        }
        return Data(bytes)
    }

    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        _ = try await replay.complete(.init(op: .subscribe, characteristic: characteristic))
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
        let previous = state.withLock { state in
            defer { state.subscribers[characteristic] = continuation }
            return state.subscribers[characteristic]
        }
        previous?.finish()
        return stream
    }

    var disconnections: AsyncStream<DisconnectReason> {
        state.withLock { $0.watchers.watch() }
    }

    func disconnect() async {
        _ = try? await replay.complete(.init(op: .disconnect))
        drop(.closedByApp)
    }

    func notify(_ value: Data, from characteristic: CharacteristicID) {
        let subscriber = state.withLock { $0.down == nil ? $0.subscribers[characteristic] : nil }
        subscriber?.yield(value)
    }

    func drop(_ reason: DisconnectReason) {
        let taken = state.withLock { state -> (DisconnectionWatchers.Notice, [AsyncStream<Data>.Continuation])? in
            guard let notice = state.watchers.markDown(reason) else { return nil }
            defer { state.subscribers = [:] }
            return (notice, Array(state.subscribers.values))
        }
        guard let (notice, subscribers) = taken else { return }
        notice.deliver()
        for subscriber in subscribers { subscriber.finish() }
    }
}
