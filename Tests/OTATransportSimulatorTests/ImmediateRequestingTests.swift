import Foundation
import OTACore
import Synchronization
import Testing

@testable import OTATransportSimulator

/// The simulated link's ``ImmediateRequesting`` (decision 0076): a write with response started
/// and, where its answer is still to come, awaited, goes as ``SimulatedConnection/write(_:to:kind:)``
/// goes — the same virtual times, the same failures.
@Suite struct ImmediateRequestingTests {
    /// esp-ble-ota's shape beside a task that wakes every 1.3 ms: the writes answered within the
    /// call and the ones left pending (the sleeper wakes first) together give the same run, line
    /// for line, as the same writes through `write`.
    @Test func startedWritesRunAsWritesDo() async throws {
        let (through, _, _) = try await run(started: false)
        let (started, answered, pending) = try await run(started: true)
        #expect(answered > 0 && pending > 0, "both paths taken: \(answered) answered at once, \(pending) pending")
        #expect(started.count == through.count)
        for (index, (expected, got)) in zip(through, started).enumerated() where expected != got {
            Issue.record("line \(index): \(got), through write: \(expected)")
            break
        }
    }

    private func run(started: Bool) async throws -> (lines: [String], answered: Int, pending: Int) {
        let simulation = Simulation(seed: 11)
        let model = RecordingDevice()
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: model, simulation: simulation)
        let lines = Lines()
        let counts = Mutex((answered: 0, pending: 0))
        try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            let sleeper = Task(executorPreference: simulation.executor) {
                for round in 0..<40 {
                    try? await simulation.clock.sleep(for: .microseconds(1_300))
                    lines.append("sleeper \(round) at \(simulation.now)")
                }
            }
            for index in 1...60 {
                let value = Data(repeating: UInt8(index), count: index * 4)
                if started {
                    switch connection.startWriteWithResponse(value, to: RecordingDevice.control) {
                    case .answered:
                        counts.withLock { $0.answered += 1 }
                    case .failed(let error):
                        throw error
                    case .pending(let write):
                        counts.withLock { $0.pending += 1 }
                        try await connection.awaitAnswer(to: write)
                    }
                } else {
                    try await connection.write(value, to: RecordingDevice.control, kind: .withResponse)
                }
                lines.append("write \(index) answered at \(simulation.now)")
            }
            await sleeper.value
            await connection.disconnect()
        }
        let (answered, pending) = counts.withLock { $0 }
        return (lines.lines, answered, pending)
    }

    /// What `write` throws before it sends, a started write returns as its failure: a
    /// characteristic that does not take writes with response, a value longer than the link
    /// takes, a link that is down.
    @Test func aRefusedWriteFailsAtOnceAsWriteThrows() async throws {
        let simulation = Simulation(seed: 1)
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: RecordingDevice(), simulation: simulation)
        let pairs: [(StartedWrite, TransportError?)] = try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            let tooLong = Data(count: connection.link.maximumWriteWithResponse + 1)
            func both(_ value: Data, _ target: CharacteristicID) async -> (StartedWrite, TransportError?) {
                let started = connection.startWriteWithResponse(value, to: target)
                let thrown = await Self.thrown { () throws(TransportError) in
                    try await connection.write(value, to: target, kind: .withResponse)
                }
                return (started, thrown)
            }
            var pairs = [await both(Data([1]), RecordingDevice.data), await both(tooLong, RecordingDevice.control)]
            await connection.disconnect()
            pairs.append(await both(Data([2]), RecordingDevice.control))
            return pairs
        }
        #expect(pairs.count == 3)
        for (started, thrown) in pairs {
            guard case .failed(let error) = started else {
                Issue.record("expected a failure, got \(started)")
                continue
            }
            #expect(thrown != nil && error.description == thrown?.description)
        }
    }

    /// A pending write the link does not know (never started, or already answered and taken)
    /// fails with a line saying so; it does not wait for ever.
    @Test func awaitingAnUnknownWriteFails() async throws {
        let simulation = Simulation(seed: 1)
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: RecordingDevice(), simulation: simulation)
        let error: TransportError? = try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            let error = await Self.thrown { () throws(TransportError) in try await connection.awaitAnswer(to: PendingWrite(id: 9_999)) }
            await connection.disconnect()
            return error
        }
        #expect(error?.description.contains("lost track of a waiting write") == true)
    }

    /// A task already cancelled sends nothing: its write with response is refused before it
    /// goes out, through `write` and through the started path alike.
    @Test func aCancelledTasksWriteIsNeverSent() async throws {
        let simulation = Simulation(seed: 1)
        let model = CountingDevice()
        let device = SimulatedDevice(profile: .esp32S3MTU244TwoM, model: model, simulation: simulation)
        let (thrown, started): (TransportError?, StartedWrite) = try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            let outcome = await Task(executorPreference: simulation.executor) {
                withUnsafeCurrentTask { $0?.cancel() }
                let thrown = await Self.thrown { () throws(TransportError) in
                    try await connection.write(Data([1]), to: RecordingDevice.control, kind: .withResponse)
                }
                return (thrown, connection.startWriteWithResponse(Data([2]), to: RecordingDevice.control))
            }.value
            try await simulation.clock.sleep(for: .milliseconds(200))
            await connection.disconnect()
            return outcome
        }
        #expect(thrown?.description == "cancelled")
        if case .failed(let error) = started {
            #expect(error.description == "cancelled")
        } else {
            Issue.record("expected a failure, got \(started)")
        }
        #expect(model.writes == 0)
    }

    private static func thrown(_ body: () async throws(TransportError) -> Void) async -> TransportError? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }
}

/// A device that counts the writes with response it receives.
private final class CountingDevice: DeviceModel {
    private let count = Mutex(0)
    var writes: Int { count.withLock { $0 } }
    var services: [GATTServiceDefinition] { RecordingDevice().services }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        if kind == .withResponse { count.withLock { $0 += 1 } }
        return .success
    }
}
