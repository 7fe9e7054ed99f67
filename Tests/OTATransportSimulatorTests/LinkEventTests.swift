import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTATransportSimulator

/// The pieces of a connection event that are computed differently since decision 0050 give the
/// values the old computation gave: virtual time must not move.
@Suite struct LinkEventTests {
    /// The event count found with integers, stepping from the last one, is the old `Double`
    /// quotient rounded up and corrected: on exact multiples of the interval and an attosecond,
    /// a nanosecond or a few units in the last place either side of them, far into a link's life
    /// (where the times are no longer exact as `Double`s), from guesses near and far, and on
    /// seeded values; an interval that is not exact as a `Double` always takes the old path.
    @Test func theEventCountIsTheOldDoubleCeiling() {
        var random = SeededRandom(seed: 50)
        let intervals: [Int128] = [
            7_500_000_000_000_000, 15_000_000_000_000_000, 30_000_000_000_000_000, 1_250_000_000_000_000, 3,
            Int128(random.next() >> 12) + 1, (1 << 60) + 1,
        ]
        var checked = 0
        for interval in intervals {
            var samples: [Int128] = [0, 1, interval - 1, interval, interval + 1]
            for multiple in [2, 3, 7, 1000, 123_456, 10_000_000, 1 << 40] as [Int128] {
                for delta in [-1_000_000_000, -65536, -4096, -1, 0, 1, 4096, 65536, 1_000_000_000] as [Int128] {
                    samples.append(interval * multiple + delta)
                }
            }
            for _ in 0..<3000 { samples.append(Int128(random.next() >> UInt64(random.next() % 40))) }
            for _ in 0..<300 { samples.append(Int128(random.next()) * Int128(random.next() % 1000 + 1)) }
            // (Counts past 2^62 trap in the old path's `Int64` conversion; a link never gets there.)
            for since in samples where since >= 0 && since / interval < 1 << 62 {
                let old = LinkClock.doubleEvents(until: since, interval: interval)
                let exact = LinkClock.isExactDouble(interval)
                for guess in [old, old - 1, old + 1, old - 5, 0, old + 100] {
                    let new = LinkClock.events(until: since, interval: interval, intervalIsExact: exact, near: guess)
                    #expect(new == old, "since \(since) as, interval \(interval) as, guess \(guess)")
                    checked += 1
                }
            }
        }
        #expect(checked > 100_000)
    }

    /// The link's next event, found from the last one (the event itself or the one after it,
    /// without the search), is the old `Double` ceiling too: on a walk through a link's life in
    /// steps of a fraction of an interval, onto events and an attosecond or a few units in the
    /// last place either side of them, with jumps hours ahead (where the times round as
    /// `Double`s) and back, from anchors at zero and far from it.
    @Test func theNextEventFromTheLastIsTheOldDoubleCeiling() {
        var random = SeededRandom(seed: 51)
        let profile = DeviceProfile.esp32S3MTU244TwoM
        var checked = 0
        var mismatches: [String] = []
        for interval in [15_000_000_000_000_000, 7_500_000_000_000_000, 1_250_000_000_000_000, 3, (1 << 60) + 1] as [Int128] {
            for anchor in [0, 123_456_789_012_345_678_901, 5] as [Int128] {
                var clock = LinkClock(anchor: Duration(attoseconds: anchor), link: profile.link, device: profile)
                clock.interval = interval
                clock.intervalIsExact = LinkClock.isExactDouble(interval)
                var earliest = anchor
                for _ in 0..<6000 {
                    let base = (earliest - anchor) / interval * interval + anchor
                    let unit = max(1, Int128(1) << max(0, (earliest - anchor).bitWidth - (earliest - anchor).leadingZeroBitCount - 53))
                    switch random.next() % 12 {
                    case 0: earliest = anchor + interval * Int128(random.next() % 2_000_000)  // an event, far away
                    case 1: earliest = base + interval  // onto the next event
                    case 2: earliest = base + interval - 1
                    case 3: earliest = base + interval + 1
                    case 4: earliest = base + interval - unit
                    case 5: earliest = base + interval - 2 * unit
                    case 6: earliest = base + interval - 2 * unit - 1
                    case 7: earliest = base + 2 * interval - 3 * unit
                    default: earliest += Int128(random.next() % UInt64(clamping: interval * 2 + 1))
                    }
                    if earliest < anchor || (earliest - anchor) / interval >= 1 << 62 { earliest = anchor }
                    let expected = anchor + interval * Int128(LinkClock.doubleEvents(until: earliest - anchor, interval: interval))
                    let found = clock.nextEvent(atOrAfter: earliest)
                    if found != expected, mismatches.count < 3 {
                        mismatches.append("interval \(interval), anchor \(anchor), earliest \(earliest): \(found) for \(expected)")
                    }
                    checked += 1
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        #expect(checked == 90_000)
    }

    /// The test above has teeth: on an exact multiple far into a link's life the old `Double`
    /// path gives one event more than the integer ceiling (the time rounds up as a `Double`),
    /// which is why the link falls back to it there.
    @Test func theDoublePathIsNotAlwaysTheIntegerCeiling() {
        let interval: Int128 = 15_000_000_000_000_000
        let since = interval * 1_000_011  // exactly on an event 4 h 10 min into the link
        let ceiling = (since + interval - 1) / interval
        #expect(!LinkClock.isExactDouble(since))
        #expect(LinkClock.doubleEvents(until: since, interval: interval) != Int64(ceiling))
        #expect(
            LinkClock.events(until: since, interval: interval, intervalIsExact: true, near: 1_000_010)
                == LinkClock.doubleEvents(until: since, interval: interval))
    }

    /// A settling the link does without the flash's lock, folded in later with `notBefore`,
    /// leaves the flash where two settlings through it would have.
    @Test func aSettlingFoldedInLaterEqualsTwoSettlings() throws {
        let timing = FlashTiming(sectorSize: 4096, sectorEraseTime: .milliseconds(45), writeBytesPerSecond: 400_000)
        let ms: Int128 = 1_000_000_000_000_000
        for (busy, floor, time) in [(5 * ms, 7 * ms, 9 * ms), (5 * ms, 3 * ms, 4 * ms), (5 * ms, 8 * ms, 6 * ms), (0, 0, 0)] as [(Int128, Int128, Int128)] {
            let twice = SimulatedFlash(capacity: 8192, timing: timing)
            let once = SimulatedFlash(capacity: 8192, timing: timing)
            for flash in [twice, once] {
                flash.resetBusy(to: Duration(attoseconds: busy))
            }
            _ = twice.settle(attoseconds: floor)
            try twice.write(Data(count: 100), at: 0)
            try once.write(Data(count: 100), at: 0)
            let expected = twice.settle(attoseconds: time)
            #expect(once.settle(attoseconds: time, notBefore: floor) == expected)
            #expect(once.settle(attoseconds: 0) == twice.settle(attoseconds: 0))
        }
        // Kept on its own (the link going down), it raises the busy time and folds in no work.
        let flash = SimulatedFlash(capacity: 8192, timing: timing)
        try flash.write(Data(count: 100), at: 0)
        flash.raiseBusy(to: 10 * ms)
        #expect(flash.settle(attoseconds: 0) == 10 * ms + timing.writeTime(100).attoseconds)
    }

    /// Repeated writes of one length cost what each costs alone (the cached programming time).
    @Test func theCachedWriteTimeFollowsTheLength() throws {
        let timing = FlashTiming(sectorSize: 4096, sectorEraseTime: .milliseconds(45), writeBytesPerSecond: 333_333)
        let flash = SimulatedFlash(capacity: 8192, timing: timing)
        try flash.write(Data(count: 244), at: 0)
        try flash.write(Data(count: 244), at: 244)
        try flash.write(Data(count: 17), at: 488)
        #expect(flash.settle(at: .zero) == timing.writeTime(244) * 2 + timing.writeTime(17))
    }

    /// A connection event borrows the random source: the draws go on as ``Simulation/randomUnit()``
    /// would have made them.
    @Test func aLentRandomSourceContinuesTheSequence() {
        let reference = Simulation(seed: 9)
        let lending = Simulation(seed: 9)
        var expected: [Double] = []
        for _ in 0..<10 { expected.append(reference.randomUnit()) }
        var drawn = [lending.randomUnit()]
        var source = lending.random.lend()
        for _ in 0..<5 { drawn.append(source.unit()) }
        lending.random.giveBack(source)
        for _ in 0..<4 { drawn.append(lending.randomUnit()) }
        #expect(drawn == expected)
    }

    /// Flash work added between two events (here an erase from the test's task while the link is
    /// idle) is seen by the next event's flow-control check: the busy time the link knew from
    /// its last event no longer holds once the flash changed, and the packet waits until the
    /// device's backlog is under the limit.
    @Test func flashWorkBetweenEventsHoldsTheNextPacket() async throws {
        let simulation = Simulation(seed: 3)
        let model = ArrivalTimes(simulation: simulation)
        let profile = DeviceProfile.esp32S3MTU244TwoM
        let device = SimulatedDevice(profile: profile, model: model, simulation: simulation)
        let (erasedAt, busyUntil) = try await simulation.run {
            let link = try await SimulatedConnector(device: device).connectSimulated()
            try await link.write(Data(repeating: 1, count: 100), to: RecordingDevice.data, kind: .withoutResponse)
            try await simulation.clock.sleep(for: .milliseconds(100))
            let erasedAt = simulation.now
            try device.flash.erase(0..<(10 * profile.flash.sectorSize))
            let busyUntil = erasedAt + profile.flash.sectorEraseTime * 10
            try await link.write(Data(repeating: 2, count: 100), to: RecordingDevice.data, kind: .withoutResponse)
            try await simulation.clock.sleep(for: .seconds(1))
            await link.disconnect()
            return (erasedAt, busyUntil)
        }
        let arrivals = model.arrivals
        #expect(arrivals.count == 2)
        if arrivals.count == 2 {
            #expect(arrivals[0] < erasedAt)
            // Held back while more than the backlog limit of work was left.
            #expect(arrivals[1] >= busyUntil - profile.backlogLimit)
        }
    }

    /// Draws from several threads at once are taken one at a time: together they are the
    /// sequence, none drawn twice or lost.
    @Test func drawsFromManyThreadsAreTheSequence() async {
        let reference = Simulation(seed: 5)
        let expected = (0..<4000).map { _ in reference.randomUnit() }
        let shared = Simulation(seed: 5)
        let drawn = await withTaskGroup(of: [Double].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<1000).map { _ in shared.randomUnit() } }
            }
            var all: [Double] = []
            for await values in group { all += values }
            return all
        }
        // Counts, not the 4,000 values, in a failure's message.
        let distinct = Set(drawn).count
        let missing = Set(expected).subtracting(drawn).count
        #expect(drawn.count == 4000 && distinct == 4000 && missing == 0)
    }

    /// Air and pair times from the link's precomputed lines equal the PHY's formulas.
    @Test(arguments: PHY.allCases)
    func theAirTimeLineIsThePHYsFormula(phy: PHY) {
        let line = phy.airTimeMicroseconds
        for payload in [0, 1, 27, 100, 251] {
            #expect(Duration(attoseconds: Int128(line.fixed + line.perByte * payload) * 1_000_000_000_000) == phy.airTime(payload: payload))
        }
    }
}
