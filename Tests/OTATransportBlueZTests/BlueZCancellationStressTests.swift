#if os(Linux)
import Foundation
import OTACore
import OTATestSupport
import OTATransportSimulator
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
            var rounds = 0
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
                // From a thread of its own, waited for with a bound (`cancel(_:after:endsWithin:)`).
                let ended = await cancel(worker, after: Double(random.next() % 8_000) / 1_000_000)
                #expect(ended, "round \(round): the cancelled operation never ended")
                guard ended else { return }
                rounds += 1
                // The link still answers.
                #expect(try await transport.read(FakeBlueZ.status) == Data([0x01, 0x02, 0x03]), "round \(round)")
            }
            #expect(rounds == 60)
            await transport.disconnect()
        }
    }
}
#endif
