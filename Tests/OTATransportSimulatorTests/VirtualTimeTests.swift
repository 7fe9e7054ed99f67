import Foundation
import OTACore
import OTATransportSimulator
import Synchronization
import Testing

@Suite struct VirtualTimeTests {
    @Test func sleepsAdvanceVirtualTimeWithoutWaiting() async throws {
        let simulation = Simulation()
        let wall = ContinuousClock.now
        let elapsed = try await simulation.run {
            try await simulation.clock.sleep(for: .seconds(3600))
            return simulation.now
        }
        #expect(elapsed == .seconds(3600))
        // An hour of virtual sleep that ends in far less than an hour: nothing slept for real.
        #expect(ContinuousClock.now - wall < .seconds(120))
    }

    /// The virtual clock's offset is its instant's, and a stopwatch on it (read through the
    /// offset) measures virtual time.
    @Test func aStopwatchOnTheVirtualClockMeasuresVirtualTime() async throws {
        let simulation = Simulation()
        let readings = try await simulation.run {
            try await simulation.clock.sleep(for: .seconds(7))
            let stopwatch = Stopwatch(clock: simulation.clock)
            try await simulation.clock.sleep(for: .milliseconds(250))
            return (simulation.clock.offsetNow, simulation.clock.now.offset, stopwatch.elapsed)
        }
        #expect(readings.0 == .milliseconds(7_250))
        #expect(readings.1 == .milliseconds(7_250))
        #expect(readings.2 == .milliseconds(250))
    }

    @Test func concurrentSleepersWakeInDeadlineOrder() async throws {
        let simulation = Simulation()
        let order = try await simulation.run {
            try await withThrowingTaskGroup(of: (Int, Duration).self) { group in
                for (index, delay) in [30, 10, 20, 10].enumerated() {
                    group.addTask {
                        try await simulation.clock.sleep(for: .milliseconds(delay))
                        return (index, simulation.now)
                    }
                }
                var woke: [(Int, Duration)] = []
                for try await entry in group { woke.append(entry) }
                return woke
            }
        }
        #expect(order.map(\.0) == [1, 3, 2, 0])
        #expect(order.map(\.1) == [.milliseconds(10), .milliseconds(10), .milliseconds(20), .milliseconds(30)])
    }

    @Test func cancellationEndsASleepAtOnce() async throws {
        let simulation = Simulation()
        let (woke, at) = try await simulation.run {
            let sleeper = Task<Bool, Never>(executorPreference: simulation.executor) {
                do {
                    try await simulation.clock.sleep(for: .seconds(100))
                    return true
                } catch {
                    return false
                }
            }
            try await simulation.clock.sleep(for: .seconds(1))
            sleeper.cancel()
            return (await sleeper.value, simulation.now)
        }
        #expect(woke == false)
        #expect(at == .seconds(1))
    }

    @Test func scheduledCallbacksRunAtTheirTime() async throws {
        let simulation = Simulation()
        let seen = Mutex<[Duration]>([])
        try await simulation.run {
            for delay in [5, 1, 3] {
                simulation.schedule(at: .milliseconds(delay)) { seen.withLock { $0.append(simulation.now) } }
            }
            try await simulation.clock.sleep(for: .milliseconds(10))
        }
        #expect(seen.withLock { $0 } == [.milliseconds(1), .milliseconds(3), .milliseconds(5)])
    }

    /// Callbacks keep their closures in reused slots beside the heap: many set at the same and at
    /// mixed instants, some cancelled, fire in deadline-then-set order, each once, and a slot
    /// freed by one that fired serves a later one without calling the old closure.
    @Test func scheduledCallbacksFireOnceInOrderAndCancelledOnesNever() async throws {
        let simulation = Simulation()
        let seen = Mutex<[Int]>([])
        try await simulation.run {
            var ids: [UInt64] = []
            for index in 0..<200 {
                let deadline = Duration.milliseconds((index * 37) % 11)
                ids.append(simulation.schedule(at: deadline) { seen.withLock { $0.append(index) } })
            }
            for index in stride(from: 0, to: 200, by: 7) { simulation.executor.cancelTimer(ids[index]) }
            try await simulation.clock.sleep(for: .milliseconds(20))
            for index in 200..<210 {
                simulation.schedule(at: simulation.now + .milliseconds(210 - index)) { seen.withLock { $0.append(index) } }
            }
            try await simulation.clock.sleep(for: .milliseconds(20))
        }
        let expected =
            (0..<200).filter { $0 % 7 != 0 }.sorted { (($0 * 37) % 11, $0) < (($1 * 37) % 11, $1) }
            + (200..<210).reversed()
        #expect(seen.withLock { $0 } == expected)
    }

    /// The run loop's own thread enqueues without a lock; other threads hand their work over. A
    /// job, a timer and a cancellation from another thread reach a run loop that is idle and
    /// waiting, wake it, and take effect as made: the cancelled timer never fires.
    @Test func workFromAnotherThreadWakesTheIdleRunLoop() async throws {
        let simulation = Simulation()
        let seen = Mutex<[String]>([])
        let times = try await simulation.run {
            // A job from another thread: the continuation resumed there, while nothing else runs.
            let resumed = await withCheckedContinuation { (continuation: CheckedContinuation<Duration, Never>) in
                Thread {
                    Thread.sleep(forTimeInterval: 0.2)
                    continuation.resume(returning: simulation.now)
                }.start()
            }
            // A timer and its cancellation from another thread, both handed over while the loop
            // is busy (this job waits for them): drained in order, the timer never fires. Handed
            // to an idle loop, the timer could fire before the cancellation arrives, as it could
            // before the handover existed.
            let handedOver = Mutex(false)
            Thread {
                let early = simulation.schedule(at: .milliseconds(5)) { seen.withLock { $0.append("cancelled") } }
                simulation.executor.cancelTimer(early)
                handedOver.withLock { $0 = true }
            }.start()
            while !handedOver.withLock({ $0 }) { usleep(1000) }
            // A timer from another thread wakes the idle loop.
            let fired = await withCheckedContinuation { (continuation: CheckedContinuation<Duration, Never>) in
                Thread {
                    Thread.sleep(forTimeInterval: 0.2)
                    simulation.schedule(at: .milliseconds(10)) {
                        seen.withLock { $0.append("timer") }
                        continuation.resume(returning: simulation.now)
                    }
                }.start()
            }
            return [resumed, fired]
        }
        #expect(seen.withLock { $0 } == ["timer"])
        #expect(times == [.zero, .milliseconds(10)])
    }

    @Test func waitingForeverIsReportedAsADeadlock() async {
        let simulation = Simulation()
        await #expect(throws: SimulationError.self) {
            try await simulation.run {
                let (stream, _) = AsyncStream.makeStream(of: Int.self)
                for await _ in stream {}
            }
        }
    }

    @Test func seededRandomIsReproducible() {
        var a = SeededRandom(seed: 42)
        var b = SeededRandom(seed: 42)
        var c = SeededRandom(seed: 43)
        let first = (0..<8).map { _ in a.next() }
        #expect(first == (0..<8).map { _ in b.next() })
        #expect(first != (0..<8).map { _ in c.next() })
    }
}
