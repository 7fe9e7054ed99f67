import Foundation

/// A ``Connector`` that records every operation on the links it opens, and every notification
/// and lost link, into a ``TraceRecorder`` — for any transport, since it wraps the seam.
public struct TracingConnector: Connector {
    /// The connector recorded.
    public let inner: any Connector
    /// Where the records go.
    public let recorder: TraceRecorder
    /// The executor the forwarding tasks run on (the session's, so a simulation stays
    /// deterministic).
    public let executor: (any TaskExecutor)?

    /// Records what `inner`'s links do.
    public init(_ inner: any Connector, recorder: TraceRecorder, executor: (any TaskExecutor)?) {
        self.inner = inner
        self.recorder = recorder
        self.executor = executor
    }

    public var deviceDescription: String { inner.deviceDescription }

    public var airAddress: String? { inner.airAddress }

    /// The inner connector's, recorded the same way.
    public func reappeared(matching rule: ReappearanceRule, within window: Duration) async throws(OTAError) -> any Connector {
        TracingConnector(try await inner.reappeared(matching: rule, within: window), recorder: recorder, executor: executor)
    }

    public func connect() async throws(TransportError) -> any Transport {
        let sequence = recorder.begin(.connect)
        do {
            let transport = try await inner.connect()
            recorder.record(.connected) { record in
                record.seq = sequence
                record.link = TraceLink(transport.link)
                record.characteristics = transport.characteristics.sorted { "\($0.key)" < "\($1.key)" }.map {
                    TraceCharacteristic(service: "\($0.key.service)", characteristic: "\($0.key.characteristic)", properties: Int($0.value.rawValue))
                }
            }
            return TracingTransport(transport, recorder: recorder, executor: executor)
        } catch {
            recorder.recordFailure(of: sequence, error)
            throw error
        }
    }
}

/// A link whose operations are recorded.
final class TracingTransport: Transport {
    let inner: any Transport
    let recorder: TraceRecorder
    let executor: (any TaskExecutor)?
    /// The text of each offered characteristic's service and UUID, made once rather than per record.
    private let names: [CharacteristicID: (service: String, characteristic: String)]

    init(_ inner: any Transport, recorder: TraceRecorder, executor: (any TaskExecutor)?) {
        self.inner = inner
        self.recorder = recorder
        self.executor = executor
        names = Dictionary(
            uniqueKeysWithValues: inner.characteristics.keys.map { ($0, ("\($0.service)", "\($0.characteristic)")) })
        let disconnections = inner.disconnections
        Task(executorPreference: executor) { [recorder] in
            for await reason in disconnections {
                recorder.record(.disconnected) { record in
                    record.error = TraceError(kind: "disconnected", message: reason.description, local: reason.isLocal)
                }
            }
        }
    }

    var link: LinkParameters { inner.link }
    var characteristics: [CharacteristicID: CharacteristicProperties] { inner.characteristics }
    var disconnections: AsyncStream<DisconnectReason> { inner.disconnections }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        let keepBytes = kind == .withResponse || recorder.keepsData
        let sequence = recorder.begin(.write) { record in
            Self.identify(characteristic, names: names, in: &record)
            record.kind = kind == .withResponse ? "request" : "command"
            record.describe(value, keepingBytes: keepBytes)
        }
        try await result(of: sequence) { () async throws(TransportError) in try await inner.write(value, to: characteristic, kind: kind) }
    }

    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        let sequence = recorder.begin(.read) { Self.identify(characteristic, names: names, in: &$0) }
        return try await result(of: sequence, describing: { $0 }) { () async throws(TransportError) in try await inner.read(characteristic) }
    }

    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        let sequence = recorder.begin(.subscribe) { Self.identify(characteristic, names: names, in: &$0) }
        let values = try await result(of: sequence) { () async throws(TransportError) in try await inner.notifications(from: characteristic) }
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
        let forwarding = Task(executorPreference: executor) { [recorder, names] in
            for await value in values {
                recorder.record(.notify) { record in
                    Self.identify(characteristic, names: names, in: &record)
                    record.describe(value, keepingBytes: true)
                }
                continuation.yield(value)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in forwarding.cancel() }
        return stream
    }

    func disconnect() async {
        let sequence = recorder.begin(.disconnect)
        await inner.disconnect()
        recorder.record(.done) { $0.seq = sequence }
    }

    /// Names the characteristic involved in `record`.
    private static func identify(
        _ characteristic: CharacteristicID,
        names: [CharacteristicID: (service: String, characteristic: String)],
        in record: inout TraceRecord
    ) {
        guard let name = names[characteristic] else { return record.identify(characteristic) }
        record.service = name.service
        record.characteristic = name.characteristic
    }

    /// Runs an operation and records its result under `sequence`.
    private func result<T>(
        of sequence: Int,
        describing describe: (T) -> Data? = { _ in nil },
        _ operation: () async throws(TransportError) -> T
    ) async throws(TransportError) -> T {
        do {
            let value = try await operation()
            recorder.record(.done) { record in
                record.seq = sequence
                if let bytes = describe(value) { record.describe(bytes, keepingBytes: true) }
            }
            return value
        } catch {
            recorder.recordFailure(of: sequence, error)
            throw error
        }
    }
}

extension TraceRecord {
    /// Names the characteristic involved.
    mutating func identify(_ characteristic: CharacteristicID) {
        service = "\(characteristic.service)"
        self.characteristic = "\(characteristic.characteristic)"
    }

    /// Keeps the length and CRC-32 of `bytes`, and the bytes themselves when `keepingBytes`.
    mutating func describe(_ bytes: Data, keepingBytes: Bool) {
        length = bytes.count
        crc32 = Hex.number(CRC32.checksum(bytes), digits: 8)
        if keepingBytes { data = Hex.bytes(bytes) }
    }
}
