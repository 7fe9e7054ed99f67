import OTACore
import Testing

@Suite struct DirectTransportSessionTests {
    struct Nowhere: Connector {
        var deviceDescription: String { "nowhere" }
        func connect() async throws(TransportError) -> any Transport {
            throw TransportError(.connectionFailed, "no device answered")
        }
    }

    @Test func itRunsTheBodyWhereItIsCalledWithWhatItWasGiven() async throws {
        let clock = TestClock()
        let session = DirectTransportSession(connector: Nowhere(), clock: clock, restartDelay: .seconds(3))
        #expect(session.connector.deviceDescription == "nowhere")
        #expect(session.restartDelay == .seconds(3))
        #expect(session.executor == nil)
        #expect(try await session.run { () async throws(OTAError) in 42 } == 42)
    }

    @Test func whatTheBodyThrowsComesOutUnchanged() async {
        let session = DirectTransportSession(connector: Nowhere(), clock: TestClock(), restartDelay: .zero)
        let error = await #expect(throws: OTAError.self) {
            try await session.run { () async throws(OTAError) -> Int in throw OTAError(.cancelled, "stopped") }
        }
        #expect(error?.code == .cancelled && error?.message == "stopped")
    }
}
