import OTACore
import Testing

/// OTACore's one time limit, on a clock the test moves.
@Suite struct TimeoutTests {
    @Test func timesOutOnTheGivenClockAndCancelsTheOperation() async throws {
        let clock = TestClock()
        let never = TestClock()
        let attempt = Task {
            try await withTimeout(.seconds(10), clock: clock, timeoutError: OTAError(.timeout, "no answer in 10 s")) {
                try await never.sleep(for: .seconds(3600))
                return 1
            }
        }
        // Both children wait: the operation on its clock, the time limit on the test clock.
        #expect(await eventually { clock.sleeperCount == 1 && never.sleeperCount == 1 })
        clock.advance(by: .seconds(9))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: OTAError.self) { try await attempt.value }
        #expect(error?.code == .timeout)
        #expect(error?.message == "no answer in 10 s")
        #expect(never.sleeperCount == 0)  // the operation was cancelled
    }

    @Test func returnsWhatTheOperationReturnsInTime() async throws {
        let clock = TestClock()
        let value = try await withTimeout(.seconds(1), clock: clock, timeoutError: OTAError(.timeout, "late")) { 42 }
        #expect(value == 42)
        #expect(clock.sleeperCount == 0)  // the time limit was cancelled
        #expect(clock.now.offset == .zero)
    }

    @Test func passesTheOperationsErrorOn() async {
        await #expect(throws: OTAError.self) {
            try await withTimeout(.seconds(1), clock: TestClock(), timeoutError: OTAError(.timeout, "late")) { () -> Int in
                throw OTAError(.disconnected, "link lost")
            }
        }
    }
}
