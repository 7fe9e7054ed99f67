// The bridge's queue against a task's cancellation; the stand-in only exists off Apple platforms.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import OTACore
import OTAProtocolFramed
import OTATestSupport
import OTATransportSimulator
import Synchronization
import Testing

@testable import OTATransportCoreBluetooth

/// A wait cancelled from another thread while a delegate callback answers it on the bridge's
/// queue. The runtime runs a cancellation handler holding the task's lock, and the callback's
/// resume takes that lock: a handler that waits for the queue (`queue.sync`) while the callback
/// runs there never returns (decisions 0079, 0080). The three races below hold the queue in a
/// block that, after the cancelling thread has had 0.2 s to reach the handler, answers the wait
/// as a callback would; with the handlers waiting for the queue each hangs to its 10 s bound. A
/// stress test then cancels whole updates at random moments.
@Suite struct CancellationOnTheQueueTests {
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func aWaitCancelledAsACallbackAnswersItEnds(withExecutorPreference: Bool) async throws {
        let (_, central) = Self.central()
        let bridge = central.bridge
        let filed = Mutex<CentralBridge.Resume<Int>?>(nil)
        let operation: @Sendable () async -> Result<Int, TransportError> = {
            await bridge.suspend { _, continuation in
                filed.withLock { $0 = continuation }
                return nil
            } withdraw: { _ in
                filed.withLock { $0.take() }
            }
        }
        let waiter = withExecutorPreference ? Task(executorPreference: globalConcurrentExecutor, operation: operation) : Task(operation: operation)
        while filed.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(1)) }
        let ended = await Self.cancelHoldingTheQueue(waiter, whileTheQueueRuns: { filed.withLock { $0.take() }?.resume(returning: .success(7)) }, on: bridge)
        #expect(ended, "the cancelled wait and the callback answering it wait for each other")
        guard ended else { return }
        // Either may win; both answers are whole.
        let result = await waiter.value
        switch result {
        case .success(let value): #expect(value == 7)
        case .failure(let error): #expect(error == CoreBluetoothFailure.cancelled)
        }
    }

    @Test(.timeLimit(.minutes(1))) func aScanCancelledAsADiscoveryArrivesEnds() async throws {
        let (world, central) = Self.central()
        let bridge = central.bridge
        let scanner = central.scanner(services: nil)
        let stream = try await world.run { try await scanner.discoveries() }
        let consumer = Task {
            var seen = 0
            do {
                for try await _ in stream { seen += 1 }
            } catch {}
            return seen
        }
        // The consumer waits in the stream's `next()` (no way to observe it: a pause).
        try await Task.sleep(for: .milliseconds(50))
        let device = DiscoveredDevice(address: "00000000-0000-0000-0000-000000000001", advertisement: Advertisement())
        let ended = await Self.cancelHoldingTheQueue(
            consumer, whileTheQueueRuns: { for scan in bridge.scans.values { scan.continuation.yield(device) } }, on: bridge)
        #expect(ended, "the cancelled scan and the discovery yielded to it wait for each other")
        guard ended else { return }
        _ = await consumer.value
        let scans = bridge.onQueue { bridge.scans.count }
        #expect(scans == 0, "the cancelled scan is withdrawn")
    }

    @Test(.timeLimit(.minutes(1))) func aNotificationStreamCancelledAsANotificationArrivesEnds() async throws {
        let world = StandInWorld(seed: 5)
        let handle = world.addPeripheral(SimulatedDevice(profile: .esp32S3MTU244TwoM, model: SinkDeviceModel(), simulation: world.simulation))
        let central = world.withCurrent { CoreBluetoothCentral(clock: world.clock) }
        let (transport, stream) = try await world.run {
            let transport = try await central.connector(for: handle.identifier).connectCoreBluetooth()
            return (transport, try await transport.notifications(from: SinkDeviceModel.control))
        }
        let consumer = Task {
            var seen = 0
            for await _ in stream { seen += 1 }
            return seen
        }
        try await Task.sleep(for: .milliseconds(50))
        let ended = await Self.cancelHoldingTheQueue(
            consumer, whileTheQueueRuns: { transport.subscriptions[SinkDeviceModel.control]?.subscriber.deliver(Data([1])) }, on: central.bridge)
        #expect(ended, "the cancelled stream and the notification yielded to it wait for each other")
        guard ended else { return }
        _ = await consumer.value
        let subscribed = central.bridge.onQueue { transport.subscriptions[SinkDeviceModel.control] != nil }
        #expect(!subscribed, "the cancelled stream's subscription ends")
    }

    /// The answer a wait is given once: the first of a callback and a cancellation wins, even
    /// when it comes before the task's continuation is attached.
    @Test func anAnswerIsGivenOnceWhicheverComesFirst() async {
        let late = Answer<Int>()
        let first = await withCheckedContinuation { continuation in
            #expect(late.attach(continuation))
            #expect(!late.isAnswered)
            late.resume(returning: 1)
            late.resume(returning: 2)
        }
        #expect(first == 1)
        #expect(late.isAnswered)

        let early = Answer<Int>()
        early.resume(returning: 3)
        early.resume(returning: 4)
        #expect(early.isAnswered)
        let answered = await withCheckedContinuation { continuation in
            #expect(!early.attach(continuation), "answered before the wait began: resumed at once, not filed")
        }
        #expect(answered == 3)
    }

    /// Whole updates cancelled from another thread at random moments of wall time, so that the
    /// cancellation lands anywhere: in a connect, a discovery, a write's wait for room or for its
    /// response, a notification, a disconnect. Each must end within its bound, and the next
    /// update of the same device through the same central must complete byte-identical.
    @Test(.timeLimit(.minutes(2))) func anUpdateCancelledAtAnyMomentEndsAndTheNextCompletes() async throws {
        let image = try CoreBluetoothHarness.image(size: 40_000)
        var random = SeededRandom(seed: 29)
        var cancelledMidway = 0
        for round in 0..<60 {
            let harness = CoreBluetoothHarness(profile: .esp32S3MTU244TwoM, model: FramedDeviceModel(), seed: UInt64(round + 1))
            let central = harness.makeCentral()
            let first = Task { try await harness.update(image, using: FramedClient(), central: central) }
            // From a thread of its own, waited for with a bound (`cancel(_:after:endsWithin:)`).
            let ended = await OTATestSupport.cancel(first, after: Double(random.next() % 30_000) / 1_000_000)
            #expect(ended, "round \(round): the cancelled update never ended")
            guard ended else { return }
            if case .failure = (try? await first.value)?.result ?? .failure(OTAError(.cancelled, "")) { cancelledMidway += 1 }
            let second = try await harness.update(image, using: FramedClient(), central: central)
            #expect(throws: Never.self, "round \(round)") { try second.result.get() }
            #expect(harness.flashContents(image.count) == (try image.allBytes()), "round \(round)")
        }
        #expect(cancelledMidway > 0, "some cancellation landed inside an update")
    }

    private static func central() -> (StandInWorld, CoreBluetoothCentral) {
        let world = StandInWorld(seed: 1)
        return (world, world.withCurrent { CoreBluetoothCentral(clock: world.clock) })
    }

    /// Holds the bridge's queue, cancels `task` from another thread 50 ms later, runs `answer` on
    /// the queue 0.2 s after it was taken, and says whether `task` then ended within 10 s (wall
    /// time: a deadlock never ends).
    private static func cancelHoldingTheQueue<T: Sendable>(
        _ task: Task<T, Never>, whileTheQueueRuns answer: @escaping @Sendable () -> Void, on bridge: CentralBridge
    ) async -> Bool {
        bridge.queue.async {
            Thread.sleep(forTimeInterval: 0.2)
            answer()
        }
        return await OTATestSupport.cancel(task, after: 0.05)
    }
}
#endif
