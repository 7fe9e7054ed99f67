import Foundation
import OTACore
import Synchronization
import Testing

private let service = GATTUUID("0000fff0-0000-1000-8000-00805f9b34fb")!
private let data = CharacteristicID(service: service, characteristic: GATTUUID("0000fff1-0000-1000-8000-00805f9b34fb")!)

/// A link that keeps every write without response in order, with the path it came by: at once
/// (``ImmediateWriting``) or through the asynchronous `write`. When `offers` is false it is a
/// plain ``Transport``.
private class QueueingTransport: Transport, @unchecked Sendable {
    // @unchecked: `state` is the only mutable state, and it is a Mutex.
    struct State {
        var received = Data()
        var immediate = 0
        var waited = 0
        var asked = 0
    }

    let state = Mutex(State())
    let link = LinkParameters(attMTU: 23, maximumWriteWithoutResponse: 20, maximumWriteWithResponse: 20)
    let characteristics: [CharacteristicID: CharacteristicProperties] = [data: [.writeWithoutResponse]]
    /// Whether the immediate path takes the `n`th time it is asked (0-based).
    let takes: @Sendable (Int) -> Bool
    /// Thrown by the immediate path the `n`th time it is asked, if set.
    let failsAt: Int?

    init(takes: @escaping @Sendable (Int) -> Bool = { _ in true }, failsAt: Int? = nil) {
        self.takes = takes
        self.failsAt = failsAt
    }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        await Task.yield()
        state.withLock {
            $0.received.append(value)
            $0.waited += 1
        }
    }

    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data { Data() }

    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        AsyncStream { $0.finish() }
    }

    var disconnections: AsyncStream<DisconnectReason> { AsyncStream { _ in } }

    func disconnect() async {}
}

private final class ImmediateQueueingTransport: QueueingTransport, ImmediateWriting, @unchecked Sendable {
    func writeWithoutResponseIfReady(_ value: Data, to characteristic: CharacteristicID) throws(TransportError) -> Bool {
        let asked = state.withLock {
            $0.asked += 1
            return $0.asked - 1
        }
        if asked == failsAt { throw TransportError(.attError(0x0E), "the device refused the write (ATT error 0x0E)") }
        guard takes(asked) else { return false }
        state.withLock {
            $0.received.append(value)
            $0.immediate += 1
        }
        return true
    }
}

private final class OneTransportConnector: Connector {
    let transport: QueueingTransport
    init(_ transport: QueueingTransport) { self.transport = transport }
    var deviceDescription: String { "queueing device" }
    func connect() async throws(TransportError) -> any Transport { transport }
}

/// Streams the whole image without response.
private struct StreamProtocol: UpdateProtocol {
    var requirements: [CharacteristicRequirement] { [] }
    var dataWrites: DataWriteShape { DataWriteShape(kind: .withoutResponse) }

    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        try await context.stream(image, range: 0..<image.count, to: data)
        return .accepted
    }
}

private let image = try! FirmwareImage(bytes: Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }), name: "test.bin")

/// The engine's data writes try a transport's immediate path first and wait in `write` only when
/// it says no (decision 0070): every byte once, in order, whichever path each write took; a
/// transport without it sees every write through `write`; an error from the immediate path fails
/// the update as one from `write` does.
@Suite struct ImmediateWritingTests {
    @Test func everyWriteTakenAtOnceWhenThereIsRoom() async throws {
        let transport = ImmediateQueueingTransport()
        _ = try await UpdateEngine(clock: TestClock()).update(image, using: StreamProtocol(), connector: OneTransportConnector(transport))
        let state = transport.state.withLock { $0 }
        #expect(state.received == (try image.allBytes()))
        #expect(state.immediate == 50 && state.waited == 0)
    }

    @Test func aRefusedWriteWaitsInWriteAndTheOrderHolds() async throws {
        // Refused every third time: those 17 writes go through `write`, between the others.
        let transport = ImmediateQueueingTransport(takes: { $0 % 3 != 2 })
        _ = try await UpdateEngine(clock: TestClock()).update(image, using: StreamProtocol(), connector: OneTransportConnector(transport))
        let state = transport.state.withLock { $0 }
        #expect(state.received == (try image.allBytes()))
        #expect(state.immediate == 34 && state.waited == 16)
    }

    @Test func aTransportWithoutItWritesThroughWrite() async throws {
        let transport = QueueingTransport()
        _ = try await UpdateEngine(clock: TestClock()).update(image, using: StreamProtocol(), connector: OneTransportConnector(transport))
        let state = transport.state.withLock { $0 }
        #expect(state.received == (try image.allBytes()))
        #expect(state.waited == 50)
    }

    @Test func anErrorFromTheImmediatePathFailsTheUpdateSayingWhere() async throws {
        let transport = ImmediateQueueingTransport(failsAt: 7)
        var configuration = UpdateConfiguration()
        configuration.resume.maximumAttempts = 0
        await #expect {
            _ = try await UpdateEngine(configuration: configuration, clock: TestClock())
                .update(image, using: StreamProtocol(), connector: OneTransportConnector(transport))
        } throws: { error in
            let error = error as? OTAError
            return error?.code == .transport && error?.message.contains("sending data at byte 140: the device refused the write") == true
        }
        #expect(transport.state.withLock { $0.received } == (try image.prefix(140)))
    }
}
