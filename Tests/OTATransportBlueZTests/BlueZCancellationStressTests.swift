#if os(Linux)
import Foundation
import OTACore
import OTATransportSimulator
import Synchronization
import Testing

@testable import OTATransportBlueZ

/// The BlueZ transport's operations cancelled from another thread at random moments, while the
/// D-Bus connection's own thread delivers their replies and the notifications they wait for, and
/// the write socket's queue waits for room (its reader is slow):
/// every cancelled operation must end, and the link must still work afterwards (a cancelled
/// call's late reply is dropped, a cancelled notification stream ends its subscription).
@Suite(.needsLibDBus) struct BlueZCancellationStressTests {
    @Test(.timeLimit(.minutes(2))) func operationsCancelledAtAnyMomentEndAndTheLinkStillWorks() async throws {
        var script = FakeBlueZ.Script()
        script.readerStartsPaused = true
        try await FakeBlueZ.with(script) { bus, fake in
            let transport = try await FakeBlueZ.connector(on: bus).connectTransport()
            // A slow reader: the socket fills and writes wait for room as well as for replies.
            fake.startReading(delayMicroseconds: 100)
            var random = SeededRandom(seed: 41)
            var ended = 0
            for round in 0..<60 {
                let worker = Task {
                    let notifications = try await transport.notifications(from: FakeBlueZ.control)
                    var iterator = notifications.makeAsyncIterator()
                    for step in 0..<1_000 {
                        try await transport.write(Data("r\(round)-\(step)".utf8), to: FakeBlueZ.control, kind: .withResponse)
                        _ = await iterator.next()
                        for _ in 0..<8 {
                            try await transport.write(Data(repeating: UInt8(truncatingIfNeeded: step), count: 200), to: FakeBlueZ.data, kind: .withoutResponse)
                        }
                        _ = try await transport.read(FakeBlueZ.status)
                    }
                }
                // From a thread of its own: a cancellation that hangs must not take a thread of
                // the pool this test waits on.
                let delay = Double(random.next() % 8_000) / 1_000_000
                Thread.detachNewThread {
                    Thread.sleep(forTimeInterval: delay)
                    worker.cancel()
                }
                let done = Flag()
                let waiting = Task.detached {
                    _ = try? await worker.value
                    done.set()
                }
                let deadline = ContinuousClock.now + .seconds(10)
                while !done.isSet, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
                #expect(done.isSet, "round \(round): the cancelled operation never ended")
                guard done.isSet else { return }
                _ = await waiting.value
                ended += 1
                // The link still answers.
                #expect(try await transport.read(FakeBlueZ.status) == Data([0x01, 0x02, 0x03]), "round \(round)")
            }
            #expect(ended == 60)
            await transport.disconnect()
        }
    }

    private final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
        func set() { value.store(true, ordering: .releasing) }
    }
}
#endif
