import Foundation
import OTACore
import Synchronization
import Testing

// MARK: - An echoing link, with and without pushed notifications

private let service = GATTUUID("0000fff0-0000-1000-8000-00805f9b34fb")!
private let control = CharacteristicID(service: service, characteristic: GATTUUID("0000fff2-0000-1000-8000-00805f9b34fb")!)

/// A link whose device answers every write to the control point with a notification of the
/// same bytes, and drops the link on a write of `0xDD`. `pushes`: it offers
/// ``NotificationPushing``; otherwise notifications come only through the stream.
private class EchoTransport: Transport, @unchecked Sendable {
    // @unchecked: `state` is the only mutable state, and it is a Mutex.
    struct State {
        var stream: AsyncStream<Data>.Continuation?
        var receiver: NotificationReceiver?
        var streamsMade = 0
        var pushesMade = 0
        var cancels = 0
    }

    let state = Mutex(State())
    let link = LinkParameters(attMTU: 247, maximumWriteWithoutResponse: 244, maximumWriteWithResponse: 244)
    let characteristics: [CharacteristicID: CharacteristicProperties] = [control: [.write, .notify]]

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        let (stream, receiver) = state.withLock { ($0.stream, $0.receiver) }
        if value == Data([0xDD]) {
            stream?.finish()
            receiver?.finished()
            return
        }
        stream?.yield(value)
        receiver?.receive(value)
    }

    func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data { Data() }

    func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
        state.withLock {
            $0.stream = continuation
            $0.streamsMade += 1
        }
        return stream
    }

    var disconnections: AsyncStream<DisconnectReason> { AsyncStream { _ in } }

    func disconnect() async {}
}

private final class PushingEchoTransport: EchoTransport, NotificationPushing, @unchecked Sendable {
    func pushNotifications(
        from characteristic: CharacteristicID, to receiver: NotificationReceiver
    ) async throws(TransportError)
        -> NotificationSubscription
    {
        state.withLock {
            $0.receiver = receiver
            $0.pushesMade += 1
        }
        return NotificationSubscription { [self] in
            state.withLock {
                $0.receiver = nil
                $0.cancels += 1
            }
        }
    }
}

private final class EchoConnector: Connector {
    let transport: EchoTransport
    init(_ transport: EchoTransport) { self.transport = transport }
    var deviceDescription: String { "echoing device" }
    func connect() async throws(TransportError) -> any Transport { transport }
}

/// Writes 1...5 to the control point, collecting each echo, then `0xDD` (the link drops) and
/// waits once more: what came back, and the error that last wait ended with.
private final class EchoProtocol: UpdateProtocol {
    let outcome = Mutex<(echoes: [UInt8], error: OTAError?)>(([], nil))

    var requirements: [CharacteristicRequirement] { [] }

    func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
        try await context.withNotifications(from: control) { (inbox) throws(OTAError) in
            for value: UInt8 in 1...5 {
                try await context.write(Data([value]), to: control, kind: .withResponse, purpose: "echo \(value)")
                let echo = try await inbox.next(awaiting: "echo \(value)")
                outcome.withLock { $0.echoes.append(contentsOf: echo) }
            }
            try await context.write(Data([0xDD]), to: control, kind: .withResponse, purpose: "the drop")
            do throws(OTAError) {
                _ = try await inbox.next(awaiting: "an echo after the drop")
            } catch {
                outcome.withLock { $0.error = error }
            }
        }
        return .accepted
    }
}

/// `UpdateContext.withNotifications` takes pushed notifications from a transport that offers
/// them and the stream otherwise (decision 0066), with the same results: every answer in order,
/// a dropped link ending the wait as a disconnect, and the subscription ended when the scope is.
@Suite struct NotificationPushingTests {
    @Test(arguments: [false, true])
    func echoesArriveInOrderAndADropEndsTheWaitEitherWay(pushing: Bool) async throws {
        let transport = pushing ? PushingEchoTransport() : EchoTransport()
        let echo = EchoProtocol()
        let image = try FirmwareImage(bytes: Data([0]))
        _ = try await UpdateEngine(clock: TestClock()).update(image, using: echo, connector: EchoConnector(transport))
        let outcome = echo.outcome.withLock { $0 }
        #expect(outcome.echoes == [1, 2, 3, 4, 5])
        #expect(outcome.error?.code == .disconnected)
        let state = transport.state.withLock { ($0.streamsMade, $0.pushesMade, $0.cancels, $0.receiver == nil) }
        #expect(state.0 == (pushing ? 0 : 1), "streams made")
        #expect(state.1 == (pushing ? 1 : 0), "pushed subscriptions made")
        #expect(state.2 == (pushing ? 1 : 0), "pushed subscriptions ended with the scope")
        #expect(state.3)
    }
}
