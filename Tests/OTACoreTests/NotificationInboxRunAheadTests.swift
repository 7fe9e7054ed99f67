import Foundation
import Synchronization
import Testing

@testable import OTACore

/// A wait on the inbox over a link that can run ahead (decision 0071): the answer the link
/// brings while running ahead is taken without suspending; a run that stops short leaves the
/// wait to suspend as before; and the wait's time limit counts from when the wait began, not
/// from where running ahead stopped.
@Suite struct NotificationInboxRunAheadTests {
    static let characteristic = CharacteristicID(
        service: GATTUUID("0000fff0-0000-1000-8000-00805f9b34fb")!, characteristic: GATTUUID("0000fff1-0000-1000-8000-00805f9b34fb")!)

    /// What the link does when a wait runs it ahead, step by step.
    enum Step: Sendable {
        /// Virtual time moves on (a timer fired).
        case advance(Duration)
        /// A notification reaches the inbox.
        case deliver(UInt8)
        /// The link goes down.
        case close
    }

    /// A link that, asked to run ahead, plays its next script: each step, then `answered()`
    /// asked, as an executor firing timers would; `false` when the script runs out first.
    final class ScriptedLink: RunningAhead, @unchecked Sendable {
        // @unchecked: `state` is the only mutable state, and it is a Mutex.
        struct State {
            var scripts: [[Step]]
            var limits: [Duration] = []
            var inbox: NotificationInbox?
        }

        let clock: TestClock
        let state: Mutex<State>
        let link = LinkParameters(attMTU: 23, maximumWriteWithoutResponse: 20, maximumWriteWithResponse: 20)
        let characteristics: [CharacteristicID: CharacteristicProperties] = [:]

        init(clock: TestClock, scripts: [[Step]]) {
            self.clock = clock
            state = Mutex(State(scripts: scripts))
        }

        /// The limits the waits passed, in order.
        var limits: [Duration] { state.withLock { $0.limits } }

        func runAhead(for limit: Duration, until answered: () -> Bool) -> Bool {
            let (script, inbox): ([Step], NotificationInbox?) = state.withLock {
                $0.limits.append(limit)
                return ($0.scripts.isEmpty ? [] : $0.scripts.removeFirst(), $0.inbox)
            }
            for step in script {
                switch step {
                case .advance(let duration): clock.advance(by: duration)
                case .deliver(let byte): inbox?.deliver(Data([byte]))
                case .close: inbox?.close()
                }
                if answered() { return true }
            }
            return answered()
        }

        func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {}
        func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data { Data() }
        func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
            AsyncStream { $0.finish() }
        }
        var disconnections: AsyncStream<DisconnectReason> { AsyncStream { _ in } }
        func disconnect() async {}
    }

    /// An inbox with a 5-second default limit over a scripted link, its timer running.
    final class Bench: Sendable {
        let clock = TestClock()
        let link: ScriptedLink
        let inbox: NotificationInbox
        private let timer: Mutex<Task<Void, Never>?> = Mutex(nil)

        init(scripts: [[Step]]) {
            link = ScriptedLink(clock: clock, scripts: scripts)
            inbox = NotificationInbox(
                characteristic: NotificationInboxRunAheadTests.characteristic, clock: clock, defaultTimeout: .seconds(5), runner: link)
            let inbox = self.inbox
            link.state.withLock { $0.inbox = inbox }
            timer.withLock { $0 = Task { await inbox.runTimer() } }
        }

        /// The wait's outcome and the clock when it ended.
        func wait(timeout: Duration? = nil) async -> (Result<Data, OTAError>, Duration) {
            let result: Result<Data, OTAError>
            do throws(OTAError) {
                result = .success(try await inbox.next(timeout: timeout, awaiting: "answer"))
            } catch {
                result = .failure(error)
            }
            return (result, clock.now.offset)
        }

        func stop() {
            inbox.close()
            timer.withLock { $0 }?.cancel()
        }
    }

    @Test func anAnswerBroughtWhileRunningAheadIsTakenAtItsTime() async throws {
        let bench = Bench(scripts: [[.advance(.milliseconds(30)), .advance(.milliseconds(15)), .deliver(7), .advance(.milliseconds(30))]])
        defer { bench.stop() }
        let (result, at) = await bench.wait()
        #expect(try result.get() == Data([7]))
        // It stopped at the answer: the step after it was not played.
        #expect(at == .milliseconds(45))
        #expect(bench.link.limits == [.seconds(5)])
    }

    @Test func aRunThatStopsShortLeavesTheWaitToSuspendUntilTheAnswer() async throws {
        let bench = Bench(scripts: [[.advance(.milliseconds(30))]])
        defer { bench.stop() }
        let waiting = Task { await bench.wait(timeout: .seconds(2)) }
        #expect(await eventually { bench.inbox.isWaiting })
        bench.inbox.deliver(Data([9]))
        let (result, at) = await waiting.value
        #expect(try result.get() == Data([9]))
        #expect(at == .milliseconds(30))
        #expect(bench.link.limits == [.seconds(2)])
    }

    /// The run stops 3 s into a 5-s wait (a task became runnable): the wait times out 5 s after
    /// it began, not 5 s after the run stopped.
    @Test func theLimitCountsFromTheWaitsStartNotFromWhereRunningAheadStopped() async throws {
        let bench = Bench(scripts: [[.advance(.seconds(3))]])
        defer { bench.stop() }
        let waiting = Task { await bench.wait() }
        #expect(await eventually { bench.inbox.isWaiting && bench.clock.sleeperCount == 1 })
        bench.clock.advance(by: .seconds(1))
        try await Task.sleep(for: .milliseconds(20))
        #expect(bench.inbox.isWaiting, "timed out before its deadline")
        bench.clock.advance(by: .seconds(1))
        guard await eventually({ !bench.inbox.isWaiting }) else {
            Issue.record("the wait did not end at its deadline")
            return
        }
        let (result, at) = await waiting.value
        guard case .failure(let error) = result else {
            Issue.record("the wait did not time out: \(result)")
            return
        }
        #expect(error.code == .timeout)
        #expect(error.message.hasPrefix("timed out after 5.0 s waiting for the answer"))
        #expect(at == .seconds(5))
    }

    /// A short wait after a long one, whose deadline comes before the inbox timer's next wake,
    /// is bounded by a timer of its own: that too counts from the wait's start.
    @Test func aWaitOnATimerOfItsOwnAlsoCountsFromItsStart() async throws {
        let bench = Bench(scripts: [[], [.advance(.milliseconds(600))]])
        defer { bench.stop() }
        // A 60-s wait answered at once: the inbox's timer sleeps until 5 s.
        let first = Task { await bench.wait(timeout: .seconds(60)) }
        #expect(await eventually { bench.inbox.isWaiting && bench.clock.sleeperCount == 1 })
        bench.inbox.deliver(Data([1]))
        #expect(try await first.value.0.get() == Data([1]))
        // A 1-s wait: the run stops after 0.6 s; the wait times out at 1 s, on its own timer.
        let second = Task { await bench.wait(timeout: .seconds(1)) }
        #expect(await eventually { bench.inbox.isWaiting && bench.clock.sleeperCount == 2 })
        bench.clock.advance(by: .milliseconds(400))
        guard await eventually({ !bench.inbox.isWaiting }) else {
            Issue.record("the wait did not end at its deadline")
            return
        }
        let (result, at) = await second.value
        guard case .failure(let error) = result else {
            Issue.record("the wait did not time out: \(result)")
            return
        }
        #expect(error.code == .timeout)
        #expect(error.message.hasPrefix("timed out after 1.0 s waiting for the answer"))
        #expect(at == .seconds(1))
    }

    @Test func aLinkThatGoesDownWhileRunningAheadEndsTheWait() async throws {
        let bench = Bench(scripts: [[.advance(.milliseconds(10)), .close, .advance(.seconds(1))]])
        defer { bench.stop() }
        let (result, at) = await bench.wait()
        guard case .failure(let error) = result else {
            Issue.record("the wait did not fail: \(result)")
            return
        }
        #expect(error.code == .disconnected)
        #expect(at == .milliseconds(10))
    }
}
