/// Updates many devices at once through a few adapters, keeping each adapter within its
/// connection limit, retrying failed devices with backoff, and reporting per device.
///
/// The decisions are ``FleetSchedule``'s; this drives them: it runs each started update with the
/// ``UpdateEngine`` in a child task, and sleeps on the engine's clock while every device is
/// in backoff.
///
/// ```swift
/// let report = await FleetScheduler(engine: engine).run(devices, adapters: [FleetAdapter(name: "hci0", connectionLimit: 4)])
/// ```
public struct FleetScheduler: Sendable {
    /// The engine each update runs with; its clock is the run's clock.
    public var engine: UpdateEngine
    /// Retries and backoff.
    public var policy: FleetPolicy

    /// Creates a scheduler.
    public init(engine: UpdateEngine, policy: FleetPolicy = FleetPolicy()) {
        self.engine = engine
        self.policy = policy
    }

    private enum Wake: Sendable {
        case finished(device: Int, result: Result<UpdateReport, OTAError>)
        case timer
    }

    /// What happens to one device, as it happens: for a caller that must keep a record before the
    /// run moves on (a campaign's database).
    public enum Event: Sendable {
        /// Attempt `attempt` (1 for the first) on `device` (its index) starts through `adapter`.
        case started(device: Int, attempt: Int, adapter: String)
        /// That attempt ended.
        case finished(device: Int, attempt: Int, result: Result<UpdateReport, OTAError>)
    }

    /// Updates every device and reports on each; never throws: a device's failure is in its
    /// report. Cancelling the calling task cancels the running updates.
    ///
    /// - Parameter observe: called with each ``Event`` before the run goes on: the next update
    ///   starts (or the next decision is made) only once it returns.
    public func run(
        _ devices: [FleetDevice], adapters: [FleetAdapter], observe: (@Sendable (Event) async -> Void)? = nil
    ) async -> FleetReport {
        let stopwatch = Stopwatch(clock: engine.clock)
        let names = adapters.map(\.name)
        let reach = devices.map { device in device.connectors.compactMap { names.firstIndex(of: $0.adapter) } }
        var schedule = FleetSchedule(adapters: adapters, reach: reach, policy: policy)
        var reports = devices.map {
            FleetDeviceReport(id: $0.id, update: nil, failures: [], attempts: 0, adapter: nil, duration: .zero, finishedAt: .zero)
        }
        var firstStart: [Duration?] = Array(repeating: nil, count: devices.count)
        var peaks = Array(repeating: 0, count: adapters.count)
        let engine = self.engine
        await withTaskGroup(of: Wake.self) { group in
            var timer: Duration?
            while !schedule.isFinished {
                let now = stopwatch.elapsed
                for start in schedule.start(at: now) {
                    let device = devices[start.device]
                    let adapter = adapters[start.adapter].name
                    guard let connector = device.connectors.first(where: { $0.adapter == adapter })?.connector else {
                        // Cannot happen (a device's adapters come from its connectors); never leave it running.
                        reports[start.device].failures.append(
                            OTAError(.invalidParameter, "no connector for \(device.id) on adapter \(adapter)"))
                        schedule.finished(start.device, succeeded: false, at: now)
                        continue
                    }
                    if firstStart[start.device] == nil { firstStart[start.device] = now }
                    reports[start.device].attempts = start.attempt
                    reports[start.device].adapter = adapter
                    await observe?(.started(device: start.device, attempt: start.attempt, adapter: adapter))
                    let index = start.device
                    group.addTask {
                        do throws(OTAError) {
                            let report = try await engine.update(device.image, using: device.updateProtocol, connector: connector)
                            return .finished(device: index, result: .success(report))
                        } catch {
                            return .finished(device: index, result: .failure(error))
                        }
                    }
                }
                for (index, count) in schedule.running.enumerated() { peaks[index] = max(peaks[index], count) }
                if let wake = schedule.nextWake(after: now), timer.map({ wake < $0 }) ?? true {
                    timer = wake
                    let clock = engine.clock
                    group.addTask {
                        try? await clock.sleep(for: wake - now)
                        return .timer
                    }
                }
                guard let next = await group.next() else { break }
                let at = stopwatch.elapsed
                switch next {
                case .timer:
                    timer = nil
                case .finished(let device, let result):
                    switch result {
                    case .success(let update): reports[device].update = update
                    case .failure(let error): reports[device].failures.append(error)
                    }
                    reports[device].finishedAt = at
                    reports[device].duration = at - (firstStart[device] ?? at)
                    await observe?(.finished(device: device, attempt: reports[device].attempts, result: result))
                    schedule.finished(device, succeeded: reports[device].update != nil, at: at)
                }
            }
            group.cancelAll()
        }
        let peakConnections = Dictionary(zip(names, peaks), uniquingKeysWith: max)
        return FleetReport(devices: reports, duration: stopwatch.elapsed, peakConnections: peakConnections)
    }
}
