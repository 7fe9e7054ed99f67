import Foundation
import Synchronization
import Testing

@testable import OTACore
@testable import OTATransportSimulator

/// A task that only timers can answer fires them itself (decision 0069): the same timers at the
/// same virtual times as the run loop, stopping wherever the run loop would have run a task
/// first, so that nothing an update sees moves.
@Suite struct RunAheadTests {
    @Test func runningAheadFiresTheNextTimersAndStopsAtTheAnswer() async throws {
        let simulation = Simulation()
        let log = Mutex<[Duration]>([])
        let (answered, stoppedAt) = try await simulation.run {
            for delay in [3, 1, 2] {
                simulation.schedule(at: .milliseconds(delay)) { log.withLock { $0.append(simulation.now) } }
            }
            let answered = simulation.executor.runAhead { log.withLock { $0.count == 2 } }
            let stoppedAt = simulation.now
            try await simulation.clock.sleep(for: .milliseconds(10))
            return (answered, stoppedAt)
        }
        #expect(answered)
        #expect(stoppedAt == .milliseconds(2))
        #expect(log.withLock { $0 } == [.milliseconds(1), .milliseconds(2), .milliseconds(3)])
    }

    /// A timer that wakes a task makes that task runnable: the run loop would run it before the
    /// next timer, so running ahead stops there, and the task runs before the answer comes.
    @Test func runningAheadStopsWhereATaskWouldRunFirst() async throws {
        let simulation = Simulation()
        let order = Lines()
        let answer = Lines()
        let (answered, stoppedAt) = try await simulation.run {
            let sleeper = Task<Void, Never>(executorPreference: simulation.executor) {
                try? await simulation.clock.sleep(for: .milliseconds(2))
                order.append("sleeper woke at \(simulation.now)")
            }
            await Task.yield()  // the sleeper runs up to its sleep, which sets its timer
            simulation.schedule(at: .milliseconds(1)) { order.append("timer at \(simulation.now)") }
            simulation.schedule(at: .milliseconds(3)) {
                order.append("answer at \(simulation.now)")
                answer.append("in")
            }
            let answered = simulation.executor.runAhead { !answer.lines.isEmpty }
            let stoppedAt = simulation.now
            await sleeper.value
            try await simulation.clock.sleep(for: .milliseconds(10))
            return (answered, stoppedAt)
        }
        #expect(!answered)
        #expect(stoppedAt == .milliseconds(2))
        #expect(order.lines == ["timer at 0.001 seconds", "sleeper woke at 0.002 seconds", "answer at 0.003 seconds"])
    }

    /// With a bound (a wait's deadline), a timer due at or after it is left to the run loop.
    @Test func runningAheadStopsBeforeTheBound() async throws {
        let simulation = Simulation()
        let log = Mutex<[Duration]>([])
        let (answered, stoppedAt) = try await simulation.run {
            for delay in [1, 2, 3] {
                simulation.schedule(at: .milliseconds(delay)) { log.withLock { $0.append(simulation.now) } }
            }
            let answered = simulation.executor.runAhead(before: .milliseconds(2)) { false }
            let stoppedAt = simulation.now
            try await simulation.clock.sleep(for: .milliseconds(10))
            return (answered, stoppedAt)
        }
        #expect(!answered)
        #expect(stoppedAt == .milliseconds(1))
        #expect(log.withLock { $0 } == [.milliseconds(1), .milliseconds(2), .milliseconds(3)])
    }

    /// A wait for the first of two notifications the device sends 50 ms on, over the simulated link, with the
    /// inbox running the link ahead (decision 0071) or suspending: what it gets, and when.
    private static func notificationWait(limit: Duration, runningAhead: Bool) async throws -> String {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        return try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            let inbox = NotificationInbox(
                characteristic: RecordingDevice.control, clock: world.simulation.clock, defaultTimeout: .seconds(5),
                runner: runningAhead ? connection : nil)
            let subscription = try await connection.pushNotifications(
                from: RecordingDevice.control, to: NotificationReceiver(receive: { inbox.deliver($0) }, finished: { inbox.close() }))
            let timer = Task(executorPreference: world.simulation.executor) { await inbox.runTimer() }
            await Task.yield()  // the inbox's timer parks: nothing is runnable when the wait begins
            defer {
                timer.cancel()
                subscription.cancel()
            }
            let start = world.simulation.now
            // Two notifications, carried by one connection event and delivered one after the
            // other: the wait ends at the first's delivery, not at the second's.
            world.simulation.schedule(at: start + .milliseconds(50)) {
                connection.notify(Data([5]), on: RecordingDevice.control)
                connection.notify(Data([6]), on: RecordingDevice.control)
            }
            let outcome: String
            do throws(OTAError) {
                outcome = "value \(Array(try await inbox.next(timeout: limit, awaiting: "the notification")))"
            } catch {
                outcome = "\(error.code)"
            }
            return "\(outcome) at \(world.simulation.now - start)"
        }
    }

    @Test func aNotificationWaitThatRunsAheadEndsAsOneThatSuspends() async throws {
        let suspended = try await Self.notificationWait(limit: .seconds(1), runningAhead: false)
        #expect(suspended.hasPrefix("value [5] at "), "\(suspended)")
        #expect(try await Self.notificationWait(limit: .seconds(1), runningAhead: true) == suspended)
    }

    /// The notification comes after the wait's limit: running ahead stops before the deadline,
    /// and the wait times out exactly then, as it does suspended.
    @Test func aNotificationWaitThatRunsAheadTimesOutAtItsDeadline() async throws {
        let suspended = try await Self.notificationWait(limit: .milliseconds(20), runningAhead: false)
        #expect(suspended == "timeout at 0.02 seconds")
        #expect(try await Self.notificationWait(limit: .milliseconds(20), runningAhead: true) == suspended)
    }

    /// A task woken at the very instant a reply reaches the central, by a timer set before the
    /// request: the task runs first, then the reply's delivery, in the order their timers were
    /// set (the timer queue's front slot, decision 0072, keeps that order).
    @Test func aReplyDeliveredAtOnceKeepsItsPlaceAmongTimersOfTheSameInstant() async throws {
        let alone = try await Self.round()
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        let order = Lines()
        let finished = try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            let start = world.simulation.now
            let sleeper = Task<Void, Never>(executorPreference: world.simulation.executor) {
                try? await world.simulation.clock.sleep(for: alone.finished)
                order.append("sleeper at \(world.simulation.now - start)")
            }
            await Task.yield()
            try await connection.write(Data([1]), to: RecordingDevice.control, kind: .withResponse)
            order.append("answered at \(world.simulation.now - start)")
            await sleeper.value
            return world.simulation.now - start
        }
        #expect(finished == alone.finished)
        #expect(order.lines == ["sleeper at \(alone.finished)", "answered at \(alone.finished)"])
    }

    /// Off the run loop's thread nothing is fired: the timers are the run loop's.
    @Test func offTheRunLoopNothingIsFired() {
        let executor = VirtualTimeExecutor()
        let fired = Mutex(false)
        executor.schedule(at: .zero) { fired.withLock { $0 = true } }
        let answered = executor.runAhead { fired.withLock { $0 } }
        #expect(!answered)
        #expect(!fired.withLock { $0 })
    }

    /// A write with response and the virtual time it ends at, with a task woken in the middle of
    /// its round trip or not, or the link dropped in the middle of it.
    private struct Round: Equatable {
        var finished: Duration
        var outcome: String
        var sleeperWoke: Duration?
    }

    private static func round(sleeperAfter: Duration? = nil, dropAfter: Duration? = nil) async throws -> Round {
        let world = SimulatorWorld(profile: .esp32S3MTU244TwoM)
        return try await world.simulation.run {
            let connection = try await SimulatedConnector(device: world.device).connectSimulated()
            let start = world.simulation.now
            let sleeper = Task<Duration?, Never>(executorPreference: world.simulation.executor) {
                guard let sleeperAfter else { return nil }
                try? await world.simulation.clock.sleep(for: sleeperAfter)
                return world.simulation.now
            }
            await Task.yield()
            if let dropAfter {
                world.simulation.schedule(at: start + dropAfter) { connection.drop(DisconnectReason("supervision timeout")) }
            }
            let outcome: String
            do {
                try await connection.write(Data([1]), to: RecordingDevice.control, kind: .withResponse)
                outcome = "answered"
            } catch let error as TransportError {
                if case .disconnected = error.kind { outcome = "disconnected" } else { outcome = "\(error)" }
            }
            let finished = world.simulation.now - start
            let woke = await sleeper.value
            return Round(finished: finished, outcome: outcome, sleeperWoke: woke.map { $0 - start })
        }
    }

    @Test func aRequestEndsWhenItWouldWithATaskWokenDuringItsRoundTrip() async throws {
        let alone = try await Self.round()
        #expect(alone.outcome == "answered")
        #expect(alone.finished > .zero)
        let half = alone.finished / 2
        let shared = try await Self.round(sleeperAfter: half)
        #expect(shared.finished == alone.finished)
        #expect(shared.outcome == "answered")
        #expect(shared.sleeperWoke == half)
    }

    @Test func aLinkDroppedDuringTheRoundTripFailsTheRequestThen() async throws {
        let alone = try await Self.round()
        let half = alone.finished / 2
        let dropped = try await Self.round(dropAfter: half)
        #expect(dropped.outcome == "disconnected")
        #expect(dropped.finished == half)
    }
}
