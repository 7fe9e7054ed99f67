import Foundation
import OTACore
import Synchronization
import Testing

private let service = GATTUUID("0000fff0-0000-1000-8000-00805f9b34fb")!
private let data = CharacteristicID(service: service, characteristic: GATTUUID("0000fff1-0000-1000-8000-00805f9b34fb")!)

/// What the link does with the `n`th write with response (0-based).
private enum Behaviour: Sendable {
    /// Answered: within the call on the immediate path.
    case answer
    /// Answered after a wait: pending on the immediate path.
    case pend
    /// Refused or answered with an error: within the call on the immediate path.
    case fail(TransportError)
    /// Fails after a wait: pending on the immediate path, its await throws.
    case pendThenFail(TransportError)
    /// Never answered: pending, its await ends only when the task is cancelled.
    case hang
}

/// A link that keeps every write with response it acknowledges, in order, with the path it came
/// by: started (``ImmediateRequesting``) or through the asynchronous `write`. A plain
/// ``Transport`` unless it is an ``ImmediateRequestingTransport``.
private class RequestTransport: Transport, @unchecked Sendable {
    // @unchecked: `state` is the only mutable state, and it is a Mutex.
    struct State {
        var received = Data()
        var started = 0
        var awaited = 0
        var written = 0
        var waiting = false
        var parked: UnsafeContinuation<Void, Never>?
    }

    let state = Mutex(State())
    let link = LinkParameters(attMTU: 23, maximumWriteWithoutResponse: 20, maximumWriteWithResponse: 20)
    let characteristics: [CharacteristicID: CharacteristicProperties] = [data: [.write]]
    let behaviour: @Sendable (Int) -> Behaviour

    init(_ behaviour: @escaping @Sendable (Int) -> Behaviour) {
        self.behaviour = behaviour
    }

    /// The index of the write now asked for.
    func next() -> Int {
        state.withLock { state in
            defer { state.written += 1 }
            return state.written
        }
    }

    func keep(_ value: Data) {
        state.withLock { $0.received.append(value) }
    }

    /// The wait of a write that is not answered at once.
    func wait(_ behaviour: Behaviour, _ value: Data) async throws(TransportError) {
        await Task.yield()
        switch behaviour {
        case .answer, .pend: keep(value)
        case .fail(let error), .pendThenFail(let error): throw error
        case .hang:
            await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    let cancelled = state.withLock { state -> Bool in
                        if Task.isCancelled { return true }
                        state.waiting = true
                        state.parked = continuation
                        return false
                    }
                    if cancelled { continuation.resume() }
                }
            } onCancel: {
                state.withLock { state in
                    let parked = state.parked
                    state.parked = nil
                    return parked
                }?.resume()
            }
            throw TransportError(.other, "cancelled")
        }
    }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        try await wait(behaviour(next()), value)
    }

    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data { Data() }

    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        AsyncStream { $0.finish() }
    }

    var disconnections: AsyncStream<DisconnectReason> { AsyncStream { _ in } }

    func disconnect() async {}
}

private final class ImmediateRequestingTransport: RequestTransport, ImmediateRequesting, @unchecked Sendable {
    private let pending = Mutex<[UInt64: (Behaviour, Data)]>([:])

    func startWriteWithResponse(_ value: Data, to characteristic: CharacteristicID) -> StartedWrite {
        let index = next()
        state.withLock { $0.started += 1 }
        switch behaviour(index) {
        case .answer:
            keep(value)
            return .answered
        case .fail(let error):
            return .failed(error)
        case let other:
            pending.withLock { $0[UInt64(index)] = (other, value) }
            return .pending(PendingWrite(id: UInt64(index)))
        }
    }

    func awaitAnswer(to write: PendingWrite) async throws(TransportError) {
        state.withLock { $0.awaited += 1 }
        guard let (behaviour, value) = pending.withLock({ $0.removeValue(forKey: write.id) }) else {
            throw TransportError(.other, "unknown write")
        }
        try await wait(behaviour, value)
    }
}

private final class OneTransportConnector: Connector {
    let transport: RequestTransport
    init(_ transport: RequestTransport) { self.transport = transport }
    var deviceDescription: String { "requesting device" }
    func connect() async throws(TransportError) -> any Transport { transport }
}

/// Writes the whole image with response, 20 bytes a write.
private struct AcknowledgedStreamProtocol: UpdateProtocol {
    var requirements: [CharacteristicRequirement] { [] }
    var dataWrites: DataWriteShape { DataWriteShape(kind: .withResponse) }

    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        try await context.stream(image, range: 0..<image.count, to: data)
        return .accepted
    }
}

/// Writes the whole image with response, 20 bytes a write, each as a command
/// (``UpdateContext/write(_:to:kind:purpose:)``): a protocol's START, Create or checksum request.
private struct AcknowledgedCommandsProtocol: UpdateProtocol {
    var requirements: [CharacteristicRequirement] { [] }

    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        var offset = 0
        while offset < image.count {
            let end = min(offset + 20, image.count)
            let bytes = try image[offset..<end]
            let start = offset
            try await context.write(bytes, to: data, kind: .withResponse, purpose: "command \(start)")
            offset = end
        }
        return .accepted
    }
}

/// How the engine is asked to write: as image data, or as commands.
enum RequestedAs: String, CaseIterable, Sendable {
    case data
    case commands

    fileprivate var updateProtocol: any UpdateProtocol {
        switch self {
        case .data: AcknowledgedStreamProtocol()
        case .commands: AcknowledgedCommandsProtocol()
        }
    }
}

private let image = try! FirmwareImage(bytes: Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }), name: "test.bin")
private let refused = TransportError(.attError(0x0E), "the device refused the write (ATT error 0x0E)")

/// The engine's writes with response, data and commands alike, go through a transport's
/// ``ImmediateRequesting`` when it offers it (decision 0076): answered within the call where it
/// can, awaited where it cannot, every byte once and in order; its failures, errors after a wait
/// and the response timeout read exactly as the same ones through `write` do.
@Suite struct ImmediateRequestingTests {
    private static func update(_ transport: RequestTransport, as shape: RequestedAs, clock: TestClock = TestClock()) async -> OTAError? {
        var configuration = UpdateConfiguration()
        configuration.resume.maximumAttempts = 0
        do {
            _ = try await UpdateEngine(configuration: configuration, clock: clock)
                .update(image, using: shape.updateProtocol, connector: OneTransportConnector(transport))
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: RequestedAs.allCases)
    func writesAnsweredAtOnceNeverWait(shape: RequestedAs) async throws {
        let transport = ImmediateRequestingTransport { _ in .answer }
        #expect(await Self.update(transport, as: shape) == nil)
        let state = transport.state.withLock { $0 }
        #expect(state.received == (try image.allBytes()))
        #expect(state.started == 50 && state.awaited == 0)
    }

    @Test(arguments: RequestedAs.allCases)
    func pendingWritesAreAwaitedAndTheOrderHolds(shape: RequestedAs) async throws {
        let transport = ImmediateRequestingTransport { $0 % 3 == 2 ? .pend : .answer }
        #expect(await Self.update(transport, as: shape) == nil)
        let state = transport.state.withLock { $0 }
        #expect(state.received == (try image.allBytes()))
        #expect(state.started == 50 && state.awaited == 16)
    }

    /// Each failure, at the eighth write (byte 140), through both paths: the same error, line
    /// for line, and the same bytes kept before it.
    @Test(arguments: ["at once", "after a wait"], RequestedAs.allCases)
    func aFailureReadsAsThroughWrite(when: String, shape: RequestedAs) async throws {
        let behaviour: @Sendable (Int) -> Behaviour = { index in
            index == 7 ? (when == "at once" ? .fail(refused) : .pendThenFail(refused)) : .answer
        }
        let plain = RequestTransport(behaviour)
        let immediate = ImmediateRequestingTransport(behaviour)
        let expected = await Self.update(plain, as: shape)
        let got = await Self.update(immediate, as: shape)
        let written = shape == .data ? "writing data at byte 140" : "writing command 140"
        #expect(expected?.message.contains("\(written): the device refused the write") == true)
        #expect(got?.code == expected?.code && got?.message == expected?.message)
        #expect(immediate.state.withLock { $0.received } == (try image.prefix(140)))
        #expect(immediate.state.withLock { $0.awaited } == (when == "at once" ? 0 : 1))
    }

    /// A write left pending that is never answered fails at the response timeout with the
    /// timeout error of a write through `write`.
    @Test(arguments: RequestedAs.allCases)
    func aPendingWriteNeverAnsweredTimesOutAsThroughWrite(shape: RequestedAs) async throws {
        func timedOut(_ transport: RequestTransport) async -> OTAError? {
            let clock = TestClock()
            let run = Task { await Self.update(transport, as: shape, clock: clock) }
            // The write waits, and the run's timer sleeps until its deadline.
            guard await eventually({ transport.state.withLock { $0.waiting } && clock.sleeperCount >= 1 }) else {
                Issue.record("the write never waited under the run's timer")
                run.cancel()
                return nil
            }
            clock.advance(by: UpdateConfiguration().responseTimeout)
            return await run.value
        }
        let hangs: @Sendable (Int) -> Behaviour = { $0 == 3 ? .hang : .answer }
        let expected = await timedOut(RequestTransport(hangs))
        let got = await timedOut(ImmediateRequestingTransport(hangs))
        #expect(expected?.code == .timeout)
        #expect(expected?.message.contains(shape == .data ? "data at byte 60" : "command 60") == true)
        #expect(got?.code == expected?.code && got?.message == expected?.message)
    }
}
