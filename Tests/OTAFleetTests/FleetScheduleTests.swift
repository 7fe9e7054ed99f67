import Testing

@testable import OTACore

@Suite("FleetSchedule")
struct FleetScheduleTests {
    let adapters = [FleetAdapter(name: "hci0", connectionLimit: 2), FleetAdapter(name: "hci1", connectionLimit: 1)]

    @Test("starts no more than each adapter's limit, in the order given, spilling to the next adapter")
    func respectsLimits() {
        var schedule = FleetSchedule(adapters: adapters, reach: Array(repeating: [0, 1], count: 5), policy: FleetPolicy())
        let starts = schedule.start(at: .zero)
        #expect(starts.map(\.device) == [0, 1, 2])
        #expect(starts.map(\.adapter) == [0, 0, 1])
        #expect(schedule.running == [2, 1])
        #expect(schedule.start(at: .seconds(1)).isEmpty)
        schedule.finished(1, succeeded: true, at: .seconds(1))
        #expect(schedule.start(at: .seconds(1)) == [FleetSchedule.Start(device: 3, adapter: 0, attempt: 1)])
    }

    @Test("a failed device waits its backoff, does not hold up the others, and fails for good at its limit")
    func retriesWithBackoff() {
        let policy = FleetPolicy(maximumAttempts: 2, initialBackoff: .seconds(2))
        var schedule = FleetSchedule(adapters: [FleetAdapter(name: "a", connectionLimit: 1)], reach: [[0], [0]], policy: policy)
        #expect(schedule.start(at: .zero).map(\.device) == [0])
        schedule.finished(0, succeeded: false, at: .seconds(1))
        #expect(schedule.nextWake(after: .seconds(1)) == .seconds(3))
        // Device 1 takes the free connection while device 0 backs off.
        #expect(schedule.start(at: .seconds(1)).map(\.device) == [1])
        schedule.finished(1, succeeded: true, at: .seconds(2))
        #expect(schedule.start(at: .seconds(2)).isEmpty)
        #expect(schedule.start(at: .seconds(3)) == [FleetSchedule.Start(device: 0, adapter: 0, attempt: 2)])
        schedule.finished(0, succeeded: false, at: .seconds(4))
        #expect(schedule.phases == [.failed, .succeeded])
        #expect(schedule.isFinished)
    }

    @Test("a device no adapter reaches fails at once")
    func unreachable() {
        let schedule = FleetSchedule(adapters: adapters, reach: [[], [7]], policy: FleetPolicy())
        #expect(schedule.phases == [.failed, .failed])
        #expect(schedule.isFinished)
    }

    @Test("backoff doubles up to its maximum")
    func backoff() {
        let policy = FleetPolicy(initialBackoff: .seconds(2), backoffMultiplier: 2, maximumBackoff: .seconds(5))
        #expect([1, 2, 3, 4].map(policy.backoff(afterAttempt:)) == [.seconds(2), .seconds(4), .seconds(5), .seconds(5)])
    }
}
