import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTATransportSimulator

/// A timer's call that would set a timer the run loop fires next takes that step at once instead
/// (decision 0073): the executor says when nothing can come first, and the link runs its next
/// event, or delivers a lone response, without the timer. Nothing anyone sees may move.
@Suite struct StepsTakenAtOnceTests {
    // MARK: - The executor's answer

    /// What `advance(toNextStepAt: 3 ms)` says from a timer's call at 1 ms, and the clock after,
    /// with another timer set first at `other` (or none), the steps allowed or not.
    private static func askFromATimer(other: Duration?, allowed: Bool = true, makeAJobRunnable: Bool = false) async throws -> String {
        let simulation = Simulation()
        simulation.executor.takesStepsAtOnce = allowed
        return try await simulation.run {
            if let other { simulation.schedule(at: other) {} }
            let answer = Mutex("")
            simulation.schedule(at: .milliseconds(1)) {
                if makeAJobRunnable { Task(executorPreference: simulation.executor) {} }
                let yes = simulation.executor.advance(toNextStepAt: .milliseconds(3))
                answer.withLock { $0 = "\(yes) at \(simulation.now)" }
            }
            try await simulation.clock.sleep(for: .milliseconds(10))
            return answer.withLock { $0 }
        }
    }

    @Test func aTimersCallTakesTheNextStepWhenNothingComesFirst() async throws {
        #expect(try await Self.askFromATimer(other: nil) == "true at 0.003 seconds")
        #expect(try await Self.askFromATimer(other: .milliseconds(4)) == "true at 0.003 seconds")
    }

    /// A timer due before, or at the same instant and set earlier, fires first: no.
    @Test func aTimerDueFirstOrAtTheSameInstantComesFirst() async throws {
        #expect(try await Self.askFromATimer(other: .milliseconds(2)) == "false at 0.001 seconds")
        #expect(try await Self.askFromATimer(other: .milliseconds(3)) == "false at 0.001 seconds")
    }

    /// A runnable task runs before any timer: no.
    @Test func aRunnableTaskComesFirst() async throws {
        #expect(try await Self.askFromATimer(other: nil, makeAJobRunnable: true) == "false at 0.001 seconds")
    }

    @Test func turnedOffItNeverSaysYes() async throws {
        #expect(try await Self.askFromATimer(other: nil, allowed: false) == "false at 0.001 seconds")
    }

    /// From a task (not a timer's call), or off the run loop's thread, nothing moves.
    @Test func onlyATimersCallMayAsk() async throws {
        let simulation = Simulation()
        let fromTask = try await simulation.run {
            let yes = simulation.executor.advance(toNextStepAt: .milliseconds(3))
            return "\(yes) at \(simulation.now)"
        }
        #expect(fromTask == "false at 0.0 seconds")
        #expect(!VirtualTimeExecutor().advance(toNextStepAt: .milliseconds(3)))
    }

    /// While a task runs ahead, a timer's call may take a step only for a run whose condition
    /// only its link's answers satisfy, and only before the run's bound.
    @Test(
        arguments: [
            (forAnswer: false, bound: nil, expected: "false at 0.001 seconds"),
            (forAnswer: true, bound: nil, expected: "true at 0.003 seconds"),
            (forAnswer: true, bound: Duration.milliseconds(5), expected: "true at 0.003 seconds"),
            (forAnswer: true, bound: Duration.milliseconds(3), expected: "false at 0.001 seconds"),
        ] as [(forAnswer: Bool, bound: Duration?, expected: String)])
    func whileRunningAhead(forAnswer: Bool, bound: Duration?, expected: String) async throws {
        let simulation = Simulation()
        let answer = try await simulation.run {
            let answer = Mutex("")
            simulation.schedule(at: .milliseconds(1)) {
                let yes = simulation.executor.advance(toNextStepAt: .milliseconds(3))
                answer.withLock { $0 = "\(yes) at \(simulation.now)" }
            }
            _ = simulation.executor.runAhead(before: bound, forAnswer: forAnswer) { !answer.withLock { $0 }.isEmpty }
            return answer.withLock { $0 }
        }
        #expect(answer == expected)
    }

    /// A paced run fires nothing ahead: the request's first event, whose place was reserved for
    /// the run ahead, is set as a timer, and the writes end when they do unpaced.
    @Test func aPacedRunSetsTheRequestsFirstEventAsATimer() async throws {
        func writes(pace: Double?) async throws -> Duration {
            let simulation = Simulation(pace: pace)
            let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: RecordingDevice(), simulation: simulation)
            return try await simulation.run {
                let connection = try await SimulatedConnector(device: device).connectSimulated()
                let start = simulation.now
                for index in 1...3 {
                    try await connection.write(Data([UInt8(index)]), to: RecordingDevice.control, kind: .withResponse)
                }
                return simulation.now - start
            }
        }
        let unpaced = try await writes(pace: nil)
        #expect(unpaced > .zero)
        #expect(try await writes(pace: 1_000) == unpaced)
    }

    /// A request whose first event is not the next step (a timer is due at the same instant)
    /// sets that event as a timer, in the place the request would have taken when it was sent:
    /// after the timer set before it, which fires first and sees the device without the write.
    /// (The link takes that place only once the event is not taken at once, and marks it 0 until
    /// then: the mark used as the place would put the event first.)
    @Test func aRequestsFirstEventSetAsATimerFiresAfterATimerSetBeforeIt() async throws {
        let simulation = Simulation(seed: 5)
        let model = ArrivalTimes(simulation: simulation)
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: model, simulation: simulation)
        let interval = device.profile.link.connectionInterval
        let (seen, second) = try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            guard case .answered = connection.startWriteWithResponse(Data([1]), to: RecordingDevice.control) else {
                throw TransportError(.other, "the first write was not answered within the call")
            }
            // The events fall on a grid from the one that carried the first write: the next one
            // at or after now carries the second.
            let first = model.arrivals[0]
            var next = first
            while next < simulation.now { next += interval }
            let seen = Mutex(-1)
            simulation.schedule(at: next) { seen.withLock { $0 = model.arrivals.count } }
            // Answered within the call or not (the run ahead may fire both timers), the timer
            // set first fires first.
            switch connection.startWriteWithResponse(Data([2]), to: RecordingDevice.control) {
            case .answered: break
            case .failed(let error): throw error
            case .pending(let write): try await connection.awaitAnswer(to: write)
            }
            return (seen.withLock { $0 }, model.arrivals[1] - next)
        }
        #expect(second == .zero, "the second write reached the device at its event")
        #expect(seen == 1, "the timer set first fired first, before the event delivered the second write")
    }

    // MARK: - The link: the same run either way

    /// Everything a run over the simulated link shows, in the order it happened, with the steps
    /// taken at once or every step a timer.
    private static func trace(
        model: some DeviceModel, profile: DeviceProfile, stepsAtOnce: Bool,
        _ body: @escaping @Sendable (SimulatedConnection, Simulation, Lines) async throws -> Void
    ) async throws -> (lines: [String], steps: Int) {
        let simulation = Simulation(seed: 7)
        simulation.executor.takesStepsAtOnce = stepsAtOnce
        let device = SimulatedDevice(profile: profile, model: model, simulation: simulation)
        let lines = Lines()
        try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            try await body(connection, simulation, lines)
            lines.append("end at \(simulation.now), \(connection.stats)")
        }
        return (lines.lines, simulation.executor.stepsTakenAtOnce)
    }

    /// Runs `body` both ways: the same lines, and steps were taken at once.
    private static func expectSameRunBothWays(
        model: @autoclosure () -> some DeviceModel, profile: DeviceProfile = .esp32S3MTU244TwoM,
        _ body: @escaping @Sendable (SimulatedConnection, Simulation, Lines) async throws -> Void
    ) async throws {
        let timers = try await trace(model: model(), profile: profile, stepsAtOnce: false, body)
        let atOnce = try await trace(model: model(), profile: profile, stepsAtOnce: true, body)
        #expect(timers.steps == 0)
        #expect(atOnce.steps > 0)
        #expect(atOnce.lines.count == timers.lines.count)
        for (index, (expected, got)) in zip(timers.lines, atOnce.lines).enumerated() where expected != got {
            Issue.record("line \(index): \(got), every step a timer: \(expected)")
            break
        }
    }

    /// On an otherwise idle link a write with response sets no timer: the event that carries it
    /// (run by the writing task, under the link's lock, before it waits), the response's event
    /// and the response's delivery are each a step taken at once, three per write.
    @Test func aWriteWithResponseOnAnIdleLinkSetsNoTimer() async throws {
        let simulation = Simulation(seed: 7)
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: AcknowledgingDevice(), simulation: simulation)
        let (before, after) = try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            let before = simulation.executor.stepsTakenAtOnce
            for index in 1...10 {
                try await connection.write(Data(repeating: UInt8(index), count: 200), to: RecordingDevice.control, kind: .withResponse)
            }
            return (before, simulation.executor.stepsTakenAtOnce)
        }
        #expect(after - before == 30)
    }

    /// A sleeper that wakes every `period`, `count` times, noting when.
    private static func sleeper(_ simulation: Simulation, _ lines: Lines, period: Duration, count: Int) -> Task<Void, Never> {
        Task(executorPreference: simulation.executor) {
            for round in 0..<count {
                try? await simulation.clock.sleep(for: period)
                lines.append("sleeper \(round) at \(simulation.now)")
            }
        }
    }

    /// esp-ble-ota's shape: writes with response one after another, a task woken in between.
    @Test func writesWithResponseBesideASleeper() async throws {
        try await Self.expectSameRunBothWays(model: RecordingDevice()) { connection, simulation, lines in
            let sleeper = Self.sleeper(simulation, lines, period: .microseconds(1_300), count: 40)
            for index in 1...60 {
                try await connection.write(Data(repeating: UInt8(index), count: index * 4), to: RecordingDevice.control, kind: .withResponse)
                lines.append("write \(index) answered at \(simulation.now)")
            }
            await sleeper.value
        }
    }

    /// A device that answers at once and then sends two notifications. One packet per event:
    /// after the response the link still has events to run, which must wait until the task
    /// that ran ahead for the response has gone on. Full events: the notifications follow the
    /// response in its event, so it is not delivered alone.
    @Test(arguments: [1, nil] as [Int?])
    func eventsAfterAResponseWaitForTheTaskItAnswered(packetsPerEvent: Int?) async throws {
        var profile = DeviceProfile.esp32S3MTU244TwoM
        profile.link.packetsPerEvent = packetsPerEvent
        try await Self.expectSameRunBothWays(model: NotifyingDevice(), profile: profile) { connection, simulation, lines in
            let subscription = try await connection.pushNotifications(
                from: RecordingDevice.control,
                to: NotificationReceiver(receive: { lines.append("notification \(Array($0)) at \(simulation.now)") }, finished: {}))
            defer { subscription.cancel() }
            for index in 1...20 {
                try await connection.write(Data([UInt8(index)]), to: RecordingDevice.control, kind: .withResponse)
                lines.append("write \(index) answered at \(simulation.now)")
            }
            try await simulation.clock.sleep(for: .milliseconds(50))
        }
    }

    /// Writes without response from one task, with response from another, a sleeper, reads,
    /// notifications: every kind of step mixed.
    @Test func everythingAtOnce() async throws {
        try await Self.expectSameRunBothWays(model: RecordingDevice()) { connection, simulation, lines in
            let subscription = try await connection.pushNotifications(
                from: RecordingDevice.control,
                to: NotificationReceiver(receive: { lines.append("notification \($0.count) at \(simulation.now)") }, finished: {}))
            defer { subscription.cancel() }
            let sleeper = Self.sleeper(simulation, lines, period: .microseconds(2_900), count: 30)
            let stream = Task(executorPreference: simulation.executor) {
                for index in 0..<300 {
                    try? await connection.write(Data(repeating: UInt8(truncatingIfNeeded: index), count: 200), to: RecordingDevice.data, kind: .withoutResponse)
                    if index % 50 == 0 { lines.append("data \(index) queued at \(simulation.now)") }
                }
            }
            for index in 1...40 {
                if index % 5 == 0 {
                    // The model refuses reads: an error response, taken at once like any other.
                    do {
                        _ = try await connection.read(RecordingDevice.control)
                        lines.append("read \(index) at \(simulation.now)")
                    } catch {
                        lines.append("read \(index) refused at \(simulation.now): \(error)")
                    }
                } else {
                    try await connection.write(Data(repeating: 1, count: index), to: RecordingDevice.control, kind: .withResponse)
                    lines.append("write \(index) answered at \(simulation.now)")
                }
            }
            await stream.value
            await sleeper.value
        }
    }
}

/// Answers a write with response as it arrives, then notifies twice (a model of a device whose
/// stack acknowledges at once and whose application reports after).
private final class NotifyingDevice: DeviceModel {
    var services: [GATTServiceDefinition] { RecordingDevice().services }
    var acknowledgesWritesOnArrival: Bool { true }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        peripheral.notify(value + Data([1]), on: RecordingDevice.control)
        peripheral.notify(value + Data([2]), on: RecordingDevice.control)
        return .success
    }
}

/// A device that acknowledges every write and does nothing else.
private final class AcknowledgingDevice: DeviceModel {
    var services: [GATTServiceDefinition] { RecordingDevice().services }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        .success
    }
}
