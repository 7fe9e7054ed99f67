import Foundation
import Synchronization
import Testing

@testable import OTACore

@Suite struct StopwatchTests {
    /// A clock offering ``OffsetClock`` that counts how it is read: its `now` and its
    /// `offsetNow` keep the same time, moved by the test.
    final class CountingOffsetClock: OffsetClock, Sendable {
        private struct Counts {
            var time: Duration = .seconds(5)
            var nowReadings = 0
            var offsetReadings = 0
        }
        private let counts = Mutex(Counts())

        var now: ContinuousClock.Instant {
            counts.withLock { $0.nowReadings += 1 }
            return ContinuousClock.Instant.now
        }
        var offsetNow: Duration {
            counts.withLock { counts in
                counts.offsetReadings += 1
                return counts.time
            }
        }
        var minimumResolution: Duration { .nanoseconds(1) }
        func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {}
        func advance(by duration: Duration) { counts.withLock { $0.time += duration } }
        var readings: (now: Int, offset: Int) { counts.withLock { ($0.nowReadings, $0.offsetReadings) } }
    }

    @Test("a clock offering offsetNow is read through it, and only through it")
    func offsetClock() {
        let clock = CountingOffsetClock()
        let stopwatch = Stopwatch(clock: clock)
        #expect(stopwatch.elapsed == .zero)
        clock.advance(by: .milliseconds(1_500))
        #expect(stopwatch.elapsed == .milliseconds(1_500))
        clock.advance(by: .microseconds(3))
        #expect(stopwatch.elapsed == .milliseconds(1_500) + .microseconds(3))
        #expect(clock.readings.now == 0)
        #expect(clock.readings.offset == 4)
    }

    @Test("any other clock is read through its instants")
    func genericClock() {
        let clock = TestClock()
        let stopwatch = Stopwatch(clock: clock)
        clock.advance(by: .seconds(2))
        #expect(stopwatch.elapsed == .seconds(2))
    }

    @Test("RealTimeClock's offset moves as its instants do")
    func realTimeClock() async throws {
        let clock = RealTimeClock()
        let before = clock.now
        let first = clock.offsetNow
        let afterFirst = clock.now
        try await Task.sleep(for: .milliseconds(5))
        let beforeSecond = clock.now
        let second = clock.offsetNow
        let after = clock.now
        // Between the two readings at least the time between their brackets' inner ends passed,
        // at most the time between their outer ends.
        #expect(second - first >= afterFirst.duration(to: beforeSecond))
        #expect(second - first <= before.duration(to: after))
        #expect(second - first >= .milliseconds(5))
    }
}
