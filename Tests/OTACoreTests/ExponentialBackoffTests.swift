import Testing

@testable import OTACore

@Suite struct ExponentialBackoffTests {
    @Test func growsByTheFactorUpToTheCap() {
        let backoff = ExponentialBackoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(3))
        #expect((1...5).map(backoff.wait) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(3), .seconds(3)])
    }

    @Test func aStepBelowOneIsTheFirstWait() {
        let backoff = ExponentialBackoff(initial: .seconds(2), multiplier: 3, maximum: .seconds(60))
        #expect(backoff.wait(0) == .seconds(2))
        #expect(backoff.wait(-7) == .seconds(2))
    }

    @Test func anInitialAboveTheCapIsCapped() {
        #expect(ExponentialBackoff(initial: .seconds(10), multiplier: 2, maximum: .seconds(4)).wait(1) == .seconds(4))
    }

    @Test func aHugeStepStopsAtTheCap() {
        // Int.max steps: returns at the cap instead of multiplying (and overflowing) Int.max times.
        #expect(ExponentialBackoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(8)).wait(.max) == .seconds(8))
    }

    @Test func bothPoliciesFollowIt() {
        let resume = ResumePolicy()
        #expect((1...6).map(resume.delay(beforeAttempt:)) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8)])
        let fleet = FleetPolicy(maximumAttempts: 3, initialBackoff: .seconds(1), backoffMultiplier: 3, maximumBackoff: .seconds(20))
        #expect((1...4).map(fleet.backoff(afterAttempt:)) == [.seconds(1), .seconds(3), .seconds(9), .seconds(20)])
    }
}
