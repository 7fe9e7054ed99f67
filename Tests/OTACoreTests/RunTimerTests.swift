import Synchronization
import Testing

@testable import OTACore

/// The run's one timer (decision 0063) on a clock the test moves: response limits and stall
/// checks fail at the times a timer of their own would have, whichever of the two is longer, and
/// nothing fails while the link moves.
@Suite struct RunTimerTests {
    /// A timer, its `run()` in a task, and what that task ended with.
    final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func add() { value.add(1, ordering: .relaxed) }
        var count: Int { value.load(ordering: .relaxed) }
    }

    final class Bench: Sendable {
        let clock = TestClock()
        let writes = Counter()
        let timer: RunTimer
        private let outcome = Mutex<OTAError?>(nil)
        private let finished = Atomic<Bool>(false)
        private let task = Mutex<Task<Void, Never>?>(nil)

        init(limit: Duration, stall: Duration) {
            let writes = self.writes
            timer = RunTimer(
                context: ObjectIdentifier(TestClock.self), limit: limit, stallTimeout: stall, clock: clock,
                writesCompleted: { writes.count })
            let started = Task { [self] in
                do {
                    try await timer.run()
                } catch let error as OTAError {
                    outcome.withLock { $0 = error }
                } catch {}
                finished.store(true, ordering: .relaxed)
            }
            task.withLock { $0 = started }
        }

        var isFinished: Bool { finished.load(ordering: .relaxed) }
        var error: OTAError? { outcome.withLock { $0 } }

        /// Waits until the timer sleeps (or parks, when `sleeping` is false) or has finished.
        func settle(sleeping: Bool = true) async {
            _ = await eventually { isFinished || (sleeping ? clock.sleeperCount == 1 : clock.sleeperCount == 0) }
        }

        /// Moves time on a second at a time until `total` has passed, the timer settling between
        /// steps.
        func advance(_ total: Duration) async {
            var passed = Duration.zero
            while passed < total, !isFinished {
                await settle()
                clock.advance(by: .seconds(1))
                passed += .seconds(1)
            }
            await settle()
        }

        func finish() async -> Bool {
            await eventually { isFinished }
        }

        func cancel() {
            task.withLock { $0 }?.cancel()
        }
    }

    static func error(_ text: String) -> RunTimer.Failure {
        .other({ OTAError(.timeout, text) })
    }

    static func stalled() -> OTAError { OTAError(.stalled, "stalled") }

    @Test func aStallIsThrownWhenNoWriteCompletesForAWholePeriodAndNotBefore() async {
        let bench = Bench(limit: .seconds(10), stall: .seconds(30))
        let armed = bench.timer.armStallChecks(stalled: Self.stalled)
        #expect(armed)
        // The first check (30 s) records the count; the next (60 s) finds it unmoved.
        await bench.advance(.seconds(59))
        #expect(!bench.isFinished)
        await bench.advance(.seconds(1))
        #expect(await bench.finish())
        #expect(bench.error?.code == .stalled)
    }

    @Test func writesBetweenChecksKeepTheTimerQuiet() async {
        let bench = Bench(limit: .seconds(10), stall: .seconds(30))
        let armed = bench.timer.armStallChecks(stalled: Self.stalled)
        #expect(armed)
        for _ in 0..<10 {
            await bench.advance(.seconds(20))
            bench.writes.add()
        }
        #expect(!bench.isFinished)
        // The writes stop at 200 s: the checks at 210 s and 240 s see the same count.
        await bench.advance(.seconds(39))
        #expect(!bench.isFinished)
        await bench.advance(.seconds(1))
        #expect(await bench.finish())
        #expect(bench.error?.code == .stalled)
    }

    @Test(arguments: [(limit: 10, stall: 30), (limit: 30, stall: 30), (limit: 45, stall: 30), (limit: 95, stall: 30)])
    func aPendingOperationFailsAtItsDeadlineWhileDataMoves(limit: Int, stall: Int) async {
        let bench = Bench(limit: .seconds(limit), stall: .seconds(stall))
        let armed = bench.timer.armStallChecks(stalled: Self.stalled)
        #expect(armed)
        _ = bench.timer.starts(failing: Self.error("the answer"))
        var passed = 0
        while passed < limit - 1 {
            await bench.advance(.seconds(1))
            bench.writes.add()
            passed += 1
        }
        #expect(!bench.isFinished, "failed before its deadline, \(passed) s in")
        await bench.advance(.seconds(1))
        #expect(await bench.finish())
        #expect(bench.error?.message == "the answer")
    }

    @Test func aDataWriteFailsWithItsOffsetAndTheLimit() async {
        let bench = Bench(limit: .seconds(10), stall: .seconds(30))
        _ = bench.timer.starts(failing: .dataWrite(offset: 4096))
        await bench.advance(.seconds(10))
        #expect(await bench.finish())
        #expect(bench.error?.code == .timeout)
        #expect(bench.error?.message == "timed out after 10.0 s waiting for the device to acknowledge data at byte 4096; is it still powered and in range?")
    }

    @Test func anOperationThatEndsInTimeThrowsNothing() async {
        let bench = Bench(limit: .seconds(10), stall: .seconds(30))
        for second in 0..<50 {
            let token = bench.timer.starts(failing: Self.error("answer \(second)"))
            await bench.advance(.seconds(9))
            bench.timer.ended(token)
        }
        #expect(!bench.isFinished)
        bench.cancel()
        #expect(await bench.finish())
        #expect(bench.error == nil)
    }

    @Test func theOldestPendingOperationFailsFirstWithItsOwnError() async {
        let bench = Bench(limit: .seconds(10), stall: .seconds(30))
        let first = bench.timer.starts(failing: Self.error("first"))
        await bench.advance(.seconds(4))
        _ = bench.timer.starts(failing: Self.error("second"))
        await bench.advance(.seconds(5))
        bench.timer.ended(first)
        // The second started at 4 s: it fails at 14 s, not at the first's 10 s.
        await bench.advance(.seconds(4))
        #expect(!bench.isFinished)
        await bench.advance(.seconds(1))
        #expect(await bench.finish())
        #expect(bench.error?.message == "second")
    }

    @Test func aWatchdogInsideAWatchdogRunsUnderTheOuterChecks() async {
        let bench = Bench(limit: .seconds(10), stall: .seconds(30))
        let armed = bench.timer.armStallChecks(stalled: Self.stalled)
        #expect(armed)
        await bench.advance(.seconds(20))
        // The inner arming does not move the outer check (30 s) to 50 s.
        let inner: @Sendable () -> OTAError = { OTAError(.stalled, "inner") }
        let innerArmed = bench.timer.armStallChecks(stalled: inner)
        #expect(!innerArmed)
        await bench.advance(.seconds(40))
        #expect(await bench.finish())
        #expect(bench.error?.message == "stalled")
    }

    @Test func disarmedChecksStopAndTheTimerParksUntilTheNextOperation() async {
        let bench = Bench(limit: .seconds(10), stall: .seconds(30))
        let armed = bench.timer.armStallChecks(stalled: Self.stalled)
        #expect(armed)
        await bench.advance(.seconds(45))
        bench.timer.disarmStallChecks()
        // It wakes for the check it planned (60 s), finds nothing to watch and parks instead of
        // sleeping, however long time moves.
        bench.clock.advance(by: .seconds(15))
        await bench.settle(sleeping: false)
        bench.clock.advance(by: .seconds(300))
        await bench.settle(sleeping: false)
        #expect(!bench.isFinished)
        #expect(bench.clock.sleeperCount == 0)
        // An operation wakes it, and its limit counts from its start.
        _ = bench.timer.starts(failing: Self.error("woken"))
        await bench.advance(.seconds(9))
        #expect(!bench.isFinished)
        await bench.advance(.seconds(1))
        #expect(await bench.finish())
        #expect(bench.error?.message == "woken")
    }

    @Test func aParkedTimerEndsWhenItsRunIsCancelled() async {
        let bench = Bench(limit: .seconds(10), stall: .seconds(30))
        await bench.settle(sleeping: false)
        bench.cancel()
        #expect(await bench.finish())
        #expect(bench.error == nil)
    }
}
