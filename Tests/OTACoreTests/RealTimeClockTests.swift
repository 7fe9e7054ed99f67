import OTACore
import Testing

/// The clock of real devices: its sleeps end at their deadline or at once on cancellation, and a
/// cancelled sleep lets go of what it holds then, not at its deadline. Its waits are real (a few
/// milliseconds at most, or a cancelled hour, which only the cancellation can end within the
/// time limit); nothing here asserts how fast anything runs.
@Suite(.timeLimit(.minutes(2))) struct RealTimeClockTests {
    @Test func aSleepEndsAtItsDeadlineAndLeavesTheClock() async throws {
        let clock = RealTimeClock()
        let deadline = clock.now.advanced(by: .milliseconds(5))
        try await clock.sleep(until: deadline)
        #expect(clock.now >= deadline)
        #expect(clock.pendingSleeps == 0)
    }

    @Test func aDeadlineAlreadyPassedReturnsWithoutWaiting() async throws {
        let clock = RealTimeClock()
        try await clock.sleep(until: clock.now.advanced(by: .seconds(-1)))
        try await clock.sleep(for: .zero)
        #expect(clock.pendingSleeps == 0)
    }

    @Test func cancellingASleepThrowsAtOnceAndLetsItGo() async throws {
        let clock = RealTimeClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(3600)) }
        #expect(await eventually { clock.pendingSleeps == 1 })
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.pendingSleeps == 0)
    }

    @Test func aTaskCancelledBeforeItSleepsThrowsWithoutWaiting() async throws {
        let clock = RealTimeClock()
        let sleeper = Task {
            while !Task.isCancelled { await Task.yield() }
            try await clock.sleep(for: .seconds(3600))
        }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.pendingSleeps == 0)
    }

    /// The clock's one timer is set for the earliest sleeper: a short sleep that comes after an
    /// hour-long one must set it earlier, or it would wait the hour.
    @Test func aSleepEarlierThanThoseWaitingWakesAtItsOwnDeadline() async throws {
        let clock = RealTimeClock()
        let long = Task { try await clock.sleep(for: .seconds(3600)) }
        #expect(await eventually { clock.pendingSleeps == 1 })
        let deadline = clock.now.advanced(by: .milliseconds(2))
        try await clock.sleep(until: deadline)
        #expect(clock.now >= deadline)
        #expect(clock.pendingSleeps == 1)
        long.cancel()
        _ = try? await long.value
        #expect(clock.pendingSleeps == 0)
    }

    @Test func sleepersWakeEachAtOrAfterItsOwnDeadline() async throws {
        let clock = RealTimeClock()
        let start = clock.now
        let lateness = try await withThrowingTaskGroup(of: Duration.self) { group in
            for milliseconds in [3, 1, 2, 1, 4] {
                let deadline = start.advanced(by: .milliseconds(milliseconds))
                group.addTask {
                    try await clock.sleep(until: deadline)
                    return deadline.duration(to: clock.now)
                }
            }
            return try await group.reduce(into: [Duration]()) { $0.append($1) }
        }
        #expect(lateness.count == 5)
        #expect(lateness.allSatisfy { $0 >= .zero })
        #expect(clock.pendingSleeps == 0)
    }

    @Test func copiesShareTheirSleepersAndClocksMadeApartDoNot() async throws {
        let clock = RealTimeClock()
        let copy = clock
        let other = RealTimeClock()
        let sleeper = Task { try await copy.sleep(for: .seconds(3600)) }
        #expect(await eventually { clock.pendingSleeps == 1 })
        #expect(other.pendingSleeps == 0)
        sleeper.cancel()
        _ = try? await sleeper.value
        #expect(clock.pendingSleeps == 0)
    }

    /// What the clock is for: a fast link makes thousands of timed waits that the operation wins.
    /// With `ContinuousClock` on Linux each cancelled sleep kept its timer for the whole hour;
    /// here each is gone by the time `withTimeout` returns, 100,000 times over.
    @Test func a100kTimedWaitsThatTheOperationWinsLeaveNothingBehind() async throws {
        let clock = RealTimeClock()
        var (sum, leftBehind) = (0, 0)
        for index in 0..<100_000 {
            sum &+= try await withTimeout(.seconds(3600), clock: clock, timeoutError: OTAError(.timeout, "late")) { index }
            leftBehind = max(leftBehind, clock.pendingSleeps)
        }
        #expect(sum == 100_000 * 99_999 / 2)
        #expect(leftBehind == 0)
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
        #expect(operations.pendingSleeps == 0)
        #expect(clock.pendingSleeps == 0)
    }
}
