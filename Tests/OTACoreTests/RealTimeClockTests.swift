import OTACore
import Testing

/// The clock of real devices: its sleeps end at their deadline or at once on cancellation, and a
/// cancelled sleep's timer is let go then, not at its deadline. Its waits are real (a few
/// milliseconds at most, or a cancelled hour); nothing here asserts how fast anything runs.
@Suite(.timeLimit(.minutes(2))) struct RealTimeClockTests {
    @Test func aSleepEndsAtItsDeadlineAndLetsItsTimerGo() async throws {
        let clock = RealTimeClock()
        let deadline = clock.now.advanced(by: .milliseconds(5))
        try await clock.sleep(until: deadline)
        #expect(clock.now >= deadline)
        #expect(await released(clock))
    }

    @Test func aDeadlineAlreadyPassedReturnsWithoutATimer() async throws {
        let clock = RealTimeClock()
        try await clock.sleep(until: clock.now.advanced(by: .seconds(-1)))
        try await clock.sleep(for: .zero)
        #expect(clock.liveTimers == 0)
    }

    @Test func cancellingASleepThrowsAtOnceAndReleasesItsTimer() async throws {
        let clock = RealTimeClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(3600)) }
        #expect(await eventually { clock.liveTimers == 1 })
        sleeper.cancel()
        // An hour's deadline: only the cancellation can end this wait within the time limit.
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(await released(clock))
    }

    @Test func aTaskCancelledBeforeItSleepsThrowsWithoutStartingATimer() async throws {
        let clock = RealTimeClock()
        let sleeper = Task {
            while !Task.isCancelled { await Task.yield() }
            try await clock.sleep(for: .seconds(3600))
        }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.liveTimers == 0)
    }

    @Test func copiesShareTheirCountAndClocksMadeApartDoNot() async throws {
        let clock = RealTimeClock()
        let copy = clock
        let other = RealTimeClock()
        let sleeper = Task { try await copy.sleep(for: .seconds(3600)) }
        #expect(await eventually { clock.liveTimers == 1 })
        #expect(other.liveTimers == 0)
        sleeper.cancel()
        _ = try? await sleeper.value
        #expect(await released(clock))
    }

    /// What the fix is for: a fast link makes thousands of timed waits that the operation wins.
    /// With `ContinuousClock` on Linux each cancelled sleep kept its timer for the whole hour, so
    /// the first thousand would still be alive when the check after them gives up; here each
    /// thousand is let go before the next starts, 100 times over.
    @Test func a100kTimedWaitsThatTheOperationWinsLetTheirTimersGo() async throws {
        let clock = RealTimeClock()
        var sum = 0
        for batch in 0..<100 {
            for index in batch * 1_000..<(batch + 1) * 1_000 {
                sum &+= try await withTimeout(.seconds(3600), clock: clock, timeoutError: OTAError(.timeout, "late")) { index }
            }
            try #require(await released(clock), "the timers of waits \(batch * 1_000)..<\((batch + 1) * 1_000) are still held")
        }
        #expect(sum == 100_000 * 99_999 / 2)
    }

    @Test func withTimeoutOnTheRealClockTimesOutAndCancelsTheOperation() async throws {
        let clock = RealTimeClock()
        let operations = RealTimeClock()
        let error = await #expect(throws: OTAError.self) {
            try await withTimeout(.milliseconds(5), clock: clock, timeoutError: OTAError(.timeout, "no answer in 5 ms")) {
                try await operations.sleep(for: .seconds(3600))
            }
        }
        #expect(error?.code == .timeout)
        #expect(error?.message == "no answer in 5 ms")
        #expect(await released(operations))
        #expect(await released(clock))
    }
}

/// Whether `clock` comes to hold no timer: dispatch lets a timer go on one of its own threads just
/// after the sleep ends, so this looks again every millisecond (on a clock of its own) for up to
/// 10 s, a bound for a loaded machine rather than a measure of speed.
private func released(_ clock: RealTimeClock) async -> Bool {
    let poll = RealTimeClock()
    for _ in 0..<10_000 {
        if clock.liveTimers == 0 { return true }
        try? await poll.sleep(for: .milliseconds(1))
    }
    return clock.liveTimers == 0
}
