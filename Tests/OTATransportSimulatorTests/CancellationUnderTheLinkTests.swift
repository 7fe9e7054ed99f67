import Foundation
import OTACore
import OTATestSupport
import Synchronization
import Testing

@testable import OTATransportSimulator

/// A task's cancellation, from another thread, racing the link's own work: the runtime runs the
/// task's cancellation handler holding the task's lock, and the handler takes the link's lock to
/// withdraw the wait; the link must therefore never resume a task while it holds its own lock.
@Suite struct CancellationUnderTheLinkTests {
    /// A writer blocked on a full write queue is cancelled from another thread while a connection
    /// event, under the link's lock, delivers the queue and so wakes it. `ota` hung this way at a
    /// SIGTERM (its update cancelled as the link woke its writer): the event resumed the writer
    /// under the link's lock, waiting for the writer's lock, which the cancelling thread held
    /// while it waited for the link's. Both must now end.
    @Test(.timeLimit(.minutes(1))) func aWriterCancelledAsAnEventWakesItEnds() async throws {
        // Paced, so the blocked writer suspends (a run ahead would never leave it suspended).
        let simulation = Simulation(seed: 3, pace: 1_000)
        let model = CancelsOnFirstDelivery()
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: model, simulation: simulation)
        let run = Task.detached {
            let sent = try await simulation.run {
                let connection = try await SimulatedConnector(device: device).connectSimulated()
                let writer = Task(executorPreference: simulation.executor) {
                    var sent = 0
                    while !Task.isCancelled {
                        do {
                            try await connection.write(Data(repeating: 0xA5, count: 20), to: RecordingDevice.data, kind: .withoutResponse)
                        } catch {
                            break
                        }
                        sent += 1
                    }
                    return sent
                }
                model.cancel.withLock { $0 = { writer.cancel() } }
                let sent = await writer.value
                await connection.disconnect()
                return sent
            }
            return sent
        }
        // Wall time: a deadlock never ends, so wait for the run with a bound of our own.
        let endedInTime = await ends(run, within: .seconds(20))
        #expect(endedInTime, "the link and the cancelled writer wait for each other")
        guard endedInTime else { return }
        let sent = try await run.value
        #expect(sent > 16, "the writer filled the queue (16 writes) and was blocked when cancelled: \(sent) sent")
        let cancelled = model.cancelled.load(ordering: .acquiring)
        #expect(cancelled)
    }

    /// At its first delivered write (inside a connection event, under the link's lock) cancels
    /// the writer from another thread and gives that thread time to reach the link's lock.
    private final class CancelsOnFirstDelivery: DeviceModel {
        let cancel = Mutex<(@Sendable () -> Void)?>(nil)
        let cancelled = Atomic<Bool>(false)
        var services: [GATTServiceDefinition] { RecordingDevice().services }

        func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
            guard !cancelled.exchange(true, ordering: .acquiringAndReleasing), let cancel = cancel.withLock({ $0 }) else { return .success }
            Thread.detachNewThread { cancel() }
            // The cancelling thread now waits for the link's lock in the writer's cancellation
            // handler, holding the writer's lock (no way to observe it: a pause in wall time).
            Thread.sleep(forTimeInterval: 0.2)
            return .success
        }
    }
}
