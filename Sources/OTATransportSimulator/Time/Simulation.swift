import Foundation
import Synchronization

/// A deterministic world: one virtual clock, one thread, one seeded random source.
///
/// Everything simulated (links, devices, the engine driving them) runs inside ``run(_:)``. The
/// same seed gives the same run, event for event.
///
/// When the simulation goes, timers still set are forgotten, and its devices go once nothing
/// else holds them; a link still up holds its device, so disconnect it first (the engine does).
///
/// ```swift
/// let simulation = Simulation(seed: 42)
/// let report = try await simulation.run {
///     try await UpdateEngine(clock: simulation.clock).update(image, using: client, connector: connector)
/// }
/// ```
public final class Simulation: Sendable {
    /// The executor that runs the simulation.
    public let executor: VirtualTimeExecutor
    /// The virtual clock; give it to the engine.
    public let clock: VirtualClock
    /// The seed the random source started from.
    public let seed: UInt64
    /// The seeded source, held by every link too (its connection events draw from it).
    let random: SimulationRandom
    private let devices = Mutex<[SimulatedDevice]>([])

    /// Creates a simulation.
    ///
    /// - Parameters:
    ///   - seed: seeds every random choice the simulation makes.
    ///   - pace: virtual seconds per wall second; `nil` runs as fast as possible.
    public init(seed: UInt64 = 1, pace: Double? = nil) {
        executor = VirtualTimeExecutor(pace: pace)
        clock = VirtualClock(executor: executor)
        self.seed = seed
        random = SimulationRandom(seed: seed)
    }

    // A timer still set when the world goes (a link's next event, a delivery, a device's restart)
    // holds its link or device, which hold the executor: without this, every such world lived as
    // long as the process (`ota benchmark --scale` kept a thousand devices and their flash).
    deinit {
        executor.discardPending()
    }

    /// Virtual time since the simulation started.
    public var now: Duration { executor.now }

    /// Every device made in this simulation, in the order made: all in range of the central.
    public var devicesInRange: [SimulatedDevice] { devices.withLock { $0 } }

    /// Adds a device to those in range (``SimulatedDevice`` does, when made).
    func register(_ device: SimulatedDevice) {
        devices.withLock { $0.append(device) }
    }

    /// A random number in `0..<1` from the simulation's seeded source.
    public func randomUnit() -> Double {
        random.unit()
    }

    /// Calls `action` on the simulation thread at virtual time `deadline`.
    @discardableResult
    public func schedule(at deadline: Duration, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        executor.schedule(at: deadline, action)
    }

    /// Runs `body` in virtual time on the simulation's thread and returns its result.
    ///
    /// A simulation can run several bodies one after another (devices and their flash persist
    /// between them, as between two runs of an app); it cannot run two at once.
    ///
    /// Child tasks and default actors used by `body` run there too; unstructured tasks
    /// (`Task { }`) do not inherit the simulation and must not be used inside it. Cancelling
    /// the calling task cancels `body`.
    ///
    /// - Throws: what `body` throws, or ``SimulationError/deadlock`` when nothing can run, no
    ///   timer is set and no outside event arrives.
    public func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let run = RunState<T>()
        let executor = self.executor
        executor.prepareForRun()
        let name = "simulation-\(seed)"
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let thread = Thread {
                    let handle = Task(executorPreference: executor) {
                        let result: Result<T, any Error>
                        do { result = .success(try await body()) } catch { result = .failure(error) }
                        run.outcome.withLock { $0 = result }
                        executor.stop()
                    }
                    // A cancellation that came before the handle was stored must not be lost.
                    let cancelled = run.task.withLock { task in
                        task = handle
                        return run.cancelled.load(ordering: .relaxed)
                    }
                    if cancelled { handle.cancel() }
                    executor.runLoop {
                        run.deadlocked.store(true, ordering: .relaxed)
                        handle.cancel()
                    }
                    done.resume()
                }
                thread.name = name
                thread.stackSize = 8 << 20
                thread.start()
            }
        } onCancel: {
            run.task.withLock { task in
                run.cancelled.store(true, ordering: .relaxed)
                task?.cancel()
            }
        }
        if run.deadlocked.load(ordering: .relaxed) { throw SimulationError.deadlock }
        guard let result = run.outcome.withLock({ $0 }) else { throw SimulationError.deadlock }
        return try result.get()
    }
}

/// A simulation's seeded random source: one sequence, drawn by the simulation and by the links'
/// connection events, which borrow it for their events.
///
/// Held by a three-state flag rather than a lock: a connection event lends and takes it back
/// once (two events of an esp-ble-ota packet used to cost four rounds of a mutex, eight atomic
/// read-modify-writes; now one compare-and-exchange and a store).
final class SimulationRandom: @unchecked Sendable {
    // @unchecked: `source` is read and written only by whoever moved `holder` away from `free`,
    // until it stores `free` again (acquiring, then releasing).
    private static let free = 0
    private static let drawing = 1
    private static let lent = 2
    private let holder = Atomic<Int>(0)
    @exclusivity(unchecked) private var source: SeededRandom

    init(seed: UInt64) {
        source = SeededRandom(seed: seed)
    }

    /// Takes the source for `state`: waits while another thread draws one value (a few
    /// instructions); a source lent to a connection event cannot be taken.
    private func take(for state: Int, _ message: @autoclosure () -> String) {
        while true {
            let (exchanged, original) = holder.compareExchange(expected: Self.free, desired: state, ordering: .acquiring)
            if exchanged { return }
            precondition(original != Self.lent, message())
        }
    }

    /// The next value in `0..<1`.
    func unit() -> Double {
        take(for: Self.drawing, "the random source is lent to a connection event")
        let value = source.unit()
        holder.store(Self.free, ordering: .releasing)
        return value
    }

    /// Lends the source to a connection event, which draws a value per packet without a lock and
    /// hands it back with ``giveBack(_:)`` before anything else can draw: the same sequence, in
    /// the same order, as calls to ``unit()``.
    func lend() -> SeededRandom {
        take(for: Self.lent, "the random source is already lent")
        return source
    }

    /// Takes back the source ``lend()`` lent, as it is after the draws made with it.
    func giveBack(_ source: SeededRandom) {
        precondition(holder.load(ordering: .relaxed) == Self.lent, "the random source was not lent")
        self.source = source
        holder.store(Self.free, ordering: .releasing)
    }
}

/// What one ``Simulation/run(_:)`` shares between the caller, the simulation thread and the body.
private final class RunState<T: Sendable>: Sendable {
    let outcome = Mutex<Result<T, any Error>?>(nil)
    let task = Mutex<Task<Void, Never>?>(nil)
    let deadlocked = Atomic<Bool>(false)
    /// Whether the caller was cancelled (set under ``task``'s lock).
    let cancelled = Atomic<Bool>(false)
}

/// A failure of the simulation itself.
public enum SimulationError: Error, Sendable, CustomStringConvertible {
    /// Nothing could run, no timer was set and nothing arrived from outside: the simulated code
    /// waits for something that will never happen.
    case deadlock

    public var description: String {
        switch self {
        case .deadlock: "simulation deadlock: every task is waiting and no timer is set"
        }
    }
}
