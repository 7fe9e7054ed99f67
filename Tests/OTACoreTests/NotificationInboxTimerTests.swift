import Foundation
import Synchronization
import Testing

@testable import OTACore

/// The inbox's one timer (decisions 0058 and 0065) on a clock the test moves: after a long wait
/// (a slot erase), a wait with the default limit still runs on the inbox's timer, not on a timer
/// of its own, and so does a short wait after a longer one once a short limit was seen; each
/// times out at its own deadline.
@Suite struct NotificationInboxTimerTests {
    static let characteristic = CharacteristicID(
        service: GATTUUID("0000fff0-0000-1000-8000-00805f9b34fb")!, characteristic: GATTUUID("0000fff1-0000-1000-8000-00805f9b34fb")!)

    /// An inbox with a 5-second default limit, its timer running in a task, and waits started
    /// in tasks of their own, each one's result kept.
    final class Bench: Sendable {
        let clock = TestClock()
        let inbox: NotificationInbox
        private let timer: Mutex<Task<Void, Never>?> = Mutex(nil)
        private let results = Mutex<[Int: Result<Data, OTAError>]>([:])

        init() {
            inbox = NotificationInbox(characteristic: NotificationInboxTimerTests.characteristic, clock: clock, defaultTimeout: .seconds(5))
            let inbox = self.inbox
            timer.withLock { $0 = Task { await inbox.runTimer() } }
        }

        /// Starts wait `id` (`timeout` nil: the default limit).
        func wait(_ id: Int, timeout: Duration?) {
            Task { [self] in
                let result: Result<Data, OTAError>
                do throws(OTAError) {
                    result = .success(try await inbox.next(timeout: timeout, awaiting: "answer \(id)"))
                } catch {
                    result = .failure(error)
                }
                results.withLock { $0[id] = result }
            }
        }

        func result(_ id: Int) -> Result<Data, OTAError>? { results.withLock { $0[id] } }

        /// The error wait `id` ended with, once it has ended; `nil` when it ended with a value
        /// or did not end.
        func failure(_ id: Int) async -> OTAError? {
            guard await eventually({ result(id) != nil }), case .failure(let error) = result(id) else { return nil }
            return error
        }

        /// Waits until `sleepers` tasks sleep on the clock.
        func settle(sleepers: Int) async -> Bool { await eventually { clock.sleeperCount == sleepers } }

        /// Moves time on one second at a time, letting the timer settle between steps.
        func advance(seconds: Int) async {
            for _ in 0..<seconds {
                _ = await eventually { clock.sleeperCount >= 1 }
                clock.advance(by: .seconds(1))
            }
        }

        func stop() {
            inbox.close()
            timer.withLock { $0 }?.cancel()
        }
    }

    @Test func aDefaultWaitAfterALongOneRunsOnTheInboxTimerAndTimesOutOnTime() async throws {
        let bench = Bench()
        defer { bench.stop() }
        // A long wait (60 s, as a slot erase's answer), answered after 7 s.
        bench.wait(1, timeout: .seconds(60))
        #expect(await bench.settle(sleepers: 1))
        await bench.advance(seconds: 7)
        bench.inbox.deliver(Data([1]))
        #expect(await eventually { bench.result(1) != nil })
        #expect(try bench.result(1)?.get() == Data([1]))

        // The next wait has the default limit (deadline 12 s). The inbox's timer is the only
        // sleeper: the wait stored its deadline with it rather than arming a timer of its own
        // (before decision 0065 the timer slept on to the 60-s deadline, and this wait raced a
        // `withTimeout`: two sleepers).
        bench.wait(2, timeout: nil)
        #expect(await eventually { bench.inbox.isWaiting })
        try await Task.sleep(for: .milliseconds(20))
        #expect(bench.clock.sleeperCount == 1)

        // It times out at its own deadline, 5 s after it began, not before.
        await bench.advance(seconds: 4)
        try await Task.sleep(for: .milliseconds(20))
        #expect(bench.result(2) == nil, "timed out before its deadline")
        await bench.advance(seconds: 1)
        let error = await bench.failure(2)
        #expect(error?.code == .timeout, "the default wait did not time out")
        #expect(error?.message.hasPrefix("timed out after 5.0 s waiting for the answer 2") == true)
    }

    @Test func aShortWaitAfterALongerOneRunsOnTheInboxTimerOnceAShortLimitWasSeen() async throws {
        let bench = Bench()
        defer { bench.stop() }
        // A packet receipt's 1-s limit, answered at once: from now on the timer sleeps at most 1 s.
        bench.wait(1, timeout: .seconds(1))
        #expect(await eventually { bench.inbox.isWaiting && bench.clock.sleeperCount == 1 })
        bench.inbox.deliver(Data([1]))
        #expect(await eventually { bench.result(1) != nil })
        // A response with the 5-s default, pending when the timer wakes at 1 s: it sleeps on
        // until 2 s (now + the shortest limit), not until the response's 5-s deadline.
        bench.wait(2, timeout: nil)
        #expect(await eventually { bench.inbox.isWaiting })
        await bench.advance(seconds: 1)
        try await Task.sleep(for: .milliseconds(20))
        bench.inbox.deliver(Data([2]))
        #expect(await eventually { bench.result(2) != nil })
        // The next receipt (deadline 2 s) is not earlier than the timer's wake: no timer of its
        // own (with the timer asleep until 5 s it would race a `withTimeout`: two sleepers).
        bench.wait(3, timeout: .seconds(1))
        #expect(await eventually { bench.inbox.isWaiting })
        try await Task.sleep(for: .milliseconds(20))
        #expect(bench.clock.sleeperCount == 1)
        // And it times out 1 s after it began.
        await bench.advance(seconds: 1)
        let error = await bench.failure(3)
        #expect(error?.code == .timeout, "the receipt wait did not time out")
        #expect(error?.message.hasPrefix("timed out after 1.0 s waiting for the answer 3") == true)
    }

    @Test func aLongWaitAloneStillTimesOutAtItsOwnDeadline() async throws {
        let bench = Bench()
        defer { bench.stop() }
        // The timer wakes every 5 s (the default limit) but ends the wait only at 60 s.
        bench.wait(1, timeout: .seconds(60))
        #expect(await bench.settle(sleepers: 1))
        await bench.advance(seconds: 59)
        try await Task.sleep(for: .milliseconds(20))
        #expect(bench.result(1) == nil, "timed out before its deadline")
        await bench.advance(seconds: 1)
        let error = await bench.failure(1)
        #expect(error?.code == .timeout, "the long wait did not time out")
        #expect(error?.message.hasPrefix("timed out after 1 min") == true)
    }
}
