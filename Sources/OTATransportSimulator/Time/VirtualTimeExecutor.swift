import Foundation
import OTACore
import Synchronization

/// A task executor that runs every job on one thread and advances a virtual clock only when
/// nothing is runnable: the heart of the deterministic simulator.
///
/// Jobs run in the order they were enqueued; when the queue is empty the executor jumps the
/// clock to the earliest timer and fires it. Timers due at the same instant fire in the order
/// they were set. Nothing sleeps for real (unless ``pace`` asks to follow the wall clock), so a
/// transfer of minutes of virtual time finishes in a fraction of a second, identically on every
/// run.
///
/// Use it through ``Simulation/run(_:)``, which starts the thread and sets the task executor
/// preference so that the body, its child tasks and default actors all run here.
public final class VirtualTimeExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the fields are in two groups.
    //
    // Owned by the run loop's thread (`jobs`, `jobsHead`, `timers`, `virtualNow`, `wallAnchor`, `runningAhead`):
    // read and written only there, with no lock. A job or timer set from that thread (nearly all
    // of them: the simulation's tasks, the link's events and replies run there) goes straight in.
    // Between two run loops they are touched by nobody but `prepareForRun()`, before the next
    // loop's thread starts.
    //
    // Guarded by `condition` (`inbox`, `actions`, `cancelledBeforeArming`): what other threads
    // hand over, drained by the run loop's thread before its next step, and the sleeps'
    // continuations (a sleep can be cancelled from any thread). `condition` is also how the run
    // loop sleeps while waiting for work from other threads.
    //
    // The runtime's exclusivity checks are off for them: the thread or the lock already rules out
    // overlapping accesses, and each job and timer would otherwise pay for several checks.
    private let condition = NSCondition()
    @exclusivity(unchecked) private var jobs: [UnownedJob] = []
    @exclusivity(unchecked) private var jobsHead = 0
    @exclusivity(unchecked) private var timers = TimerQueue()
    @exclusivity(unchecked) private var actions: [UInt64: TimerAction] = [:]
    @exclusivity(unchecked) private var cancelledBeforeArming: Set<UInt64> = []
    /// Work handed over by other threads, in the order it came; guarded by `condition`.
    @exclusivity(unchecked) private var inbox: [Handover] = []
    /// Whether `inbox` may hold something: set under the lock with each handover, read by the run
    /// loop without it, so that a step with nothing handed over takes no lock.
    private let inboxPending = Atomic<Bool>(false)
    /// The run loop's thread (`pthread_self`), or 0 while no run loop runs.
    private let owner = Atomic<UInt>(0)
    private let lastTimerID = Atomic<UInt64>(0)
    private let stopRequested = Atomic<Bool>(false)
    @exclusivity(unchecked) private var virtualNow: Duration = .zero {
        didSet { publishNow() }
    }
    /// `virtualNow` for readers that take no lock (``now``, read by the engine at every write and
    /// by the link at every connection event): a sequence count, odd while the run loop writes,
    /// and the 128 bits of attoseconds in two words.
    private let nowSequence = Atomic<UInt64>(0)
    private let nowHigh = Atomic<UInt64>(0)
    private let nowLow = Atomic<UInt64>(0)
    /// Where the wall clock and virtual time were paired, for ``pace``; `nil` without a pace.
    /// A reference: `ContinuousClock.Instant` is resilient, so an optional holding one inline
    /// made every run-loop step reserve, copy and destroy it through value witnesses.
    @exclusivity(unchecked) private var wallAnchor: WallAnchor?
    /// Whether ``runAhead(before:forAnswer:until:)`` is firing timers (on the run loop's thread).
    @exclusivity(unchecked) private var runningAhead = false
    /// While running ahead: whether the caller's condition turns true only with an answer its
    /// link keeps for it, and the bound it runs before (attoseconds), for
    /// ``advance(toNextStepAt:)``.
    @exclusivity(unchecked) private var aheadForAnswer = false
    @exclusivity(unchecked) private var aheadBound: Int128?
    /// Whether a timer's call runs (on the run loop's thread): only it may take a step at once.
    @exclusivity(unchecked) private var firingTimer = false
    /// Whether steps may be taken at once (``advance(toNextStepAt:)``, a run ahead's `first`
    /// timer): `false` makes every step a timer again, for tests that compare the two. Set
    /// before a run.
    @exclusivity(unchecked) var takesStepsAtOnce = true
    /// How many steps were taken at once: ``advance(toNextStepAt:)`` said yes, or a run ahead
    /// fired its `first` timer without the queue (on the run loop's thread).
    @exclusivity(unchecked) private(set) var stepsTakenAtOnce = 0

    /// What another thread hands the run loop.
    private enum Handover {
        case job(UnownedJob)
        case timer(TimerQueue.Entry)
        case cancel(UInt64)
    }

    /// Virtual seconds per wall-clock second, or `nil` to run as fast as possible.
    ///
    /// With a pace of 1 the simulation follows the wall clock, which makes demos look like real
    /// hardware; results are identical either way.
    public let pace: Double?

    private enum TimerAction {
        // Unchecked: a checked continuation's type is resilient, so every copy and destroy of
        // the run loop's step went through value witnesses (three per esp-ble-ota write). Each
        // is resumed once: whoever resumes it first takes it out of `actions` under the lock.
        case resume(UnsafeContinuation<Void, any Error>)
        case call(@Sendable () -> Void)
    }

    /// Creates an executor whose clock starts at zero.
    public init(pace: Double? = nil) {
        precondition(pace.map { $0 > 0 } ?? true, "pace must be positive")
        self.pace = pace
    }

    /// The current virtual time.
    public var now: Duration {
        while true {
            let before = nowSequence.load(ordering: .acquiring)
            guard before & 1 == 0 else { continue }
            let high = nowHigh.load(ordering: .acquiring)
            let low = nowLow.load(ordering: .acquiring)
            guard nowSequence.load(ordering: .acquiring) == before else { continue }
            return Duration(attoseconds: Int128(Int64(bitPattern: high)) << 64 | Int128(low))
        }
    }

    /// Publishes `virtualNow` to ``now``'s readers; called under the lock, so by one writer.
    ///
    /// A sequence lock's writer: the count made odd, a release fence (nothing below moves above
    /// it), the two words, the count made even with release ordering (the words are visible
    /// before it). The one writer reads its own count, so it stores rather than adds: no locked
    /// instruction (sequentially consistent stores and adds were four full barriers every time
    /// virtual time moved, twice or more per write).
    private func publishNow() {
        let attoseconds = virtualNow.attoseconds
        let sequence = nowSequence.load(ordering: .relaxed)
        nowSequence.store(sequence &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        nowHigh.store(UInt64(truncatingIfNeeded: attoseconds >> 64), ordering: .relaxed)
        nowLow.store(UInt64(truncatingIfNeeded: attoseconds), ordering: .relaxed)
        nowSequence.store(sequence &+ 2, ordering: .releasing)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if onRunLoopThread {
            jobs.append(unowned)
        } else {
            hand(.job(unowned))
        }
    }

    /// Whether the caller runs on the run loop's thread, where the loop's own fields may be
    /// touched without a lock.
    private var onRunLoopThread: Bool {
        owner.load(ordering: .acquiring) == CurrentThread.id
    }

    /// Hands `item` to the run loop from another thread, waking it if it waits.
    private func hand(_ item: Handover) {
        condition.lock()
        handLocked(item)
        condition.unlock()
    }

    /// ``hand(_:)`` with `condition` already held.
    private func handLocked(_ item: Handover) {
        inbox.append(item)
        inboxPending.store(true, ordering: .releasing)
        condition.signal()
    }

    /// Moves what other threads handed over into the run loop's own fields, in the order it came;
    /// on the run loop's thread only.
    private func drainInbox() {
        condition.lock()
        let items = inbox
        inbox.removeAll(keepingCapacity: true)
        inboxPending.store(false, ordering: .releasing)
        condition.unlock()
        for item in items {
            switch item {
            case .job(let job):
                jobs.append(job)
            case .timer(var entry):
                entry.deadline = max(entry.deadline, virtualNow)
                timers.insert(entry)
            case .cancel(let id):
                timers.cancelCall(id)
            }
        }
    }

    // MARK: - Timers

    /// Calls `action` on the executor thread when virtual time reaches `deadline`.
    ///
    /// From another thread than the run loop's, the timer is handed over and joins the queue
    /// before the loop's next step (its identifier, and so its place among timers due at the same
    /// instant, is taken at once).
    @discardableResult
    public func schedule(at deadline: Duration, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let id = reserveTimerID()
        set(.init(deadline: deadline, id: id, call: action))
        return id
    }

    /// Puts a timer in the queue (never before now) on the run loop's thread, or hands it over
    /// from another.
    private func set(_ entry: TimerQueue.Entry) {
        if onRunLoopThread {
            var entry = entry
            if entry.deadline < virtualNow { entry.deadline = virtualNow }
            timers.insert(entry)
        } else {
            hand(.timer(entry))
        }
    }

    /// Cancels a timer set with ``schedule(at:_:)``; does nothing if it already fired.
    ///
    /// From another thread than the run loop's, the cancellation takes effect before the loop's
    /// next step: a timer the loop is firing at that moment still fires, as before.
    public func cancelTimer(_ id: UInt64) {
        if onRunLoopThread {
            timers.cancelCall(id)
        } else {
            hand(.cancel(id))
        }
    }

    func reserveTimerID() -> UInt64 {
        lastTimerID.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// A timer whose place among those due at the same instant was taken earlier
    /// (``reserveTimerID()``), not set yet; ``none`` without a call. (Not an optional: an
    /// optional of it was checked and destroyed through value witnesses.)
    struct ReservedTimer {
        /// Attoseconds.
        var deadline: Int128
        var id: UInt64
        var call: (@Sendable () -> Void)?

        static var none: ReservedTimer { ReservedTimer(deadline: 0, id: 0, call: nil) }
    }

    /// Sets a timer whose place among those due at the same instant was taken earlier: it fires
    /// as if set then (a link's connection event sets its timers when it ends, in the places
    /// they took while it ran).
    func schedule(_ timer: ReservedTimer) {
        set(.init(deadline: Duration(attoseconds: timer.deadline), id: timer.id, call: timer.call))
    }

    /// Suspends the current task until `deadline`; throws `CancellationError` when the task is
    /// cancelled first.
    func sleep(until deadline: Duration) async throws {
        let id = reserveTimerID()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                condition.lock()
                if cancelledBeforeArming.remove(id) != nil {
                    condition.unlock()
                    continuation.resume(throwing: CancellationError())
                    return
                }
                actions[id] = .resume(continuation)
                if onRunLoopThread {
                    condition.unlock()
                    timers.insert(.init(deadline: max(deadline, virtualNow), id: id))
                } else {
                    handLocked(.timer(.init(deadline: deadline, id: id)))
                    condition.unlock()
                }
            }
        } onCancel: {
            condition.lock()
            let action = actions.removeValue(forKey: id)
            if action == nil { cancelledBeforeArming.insert(id) }
            condition.unlock()
            if case .resume(let continuation) = action {
                continuation.resume(throwing: CancellationError())
            }
        }
        forget(id)
    }

    private func forget(_ id: UInt64) {
        condition.lock()
        cancelledBeforeArming.remove(id)
        condition.unlock()
    }

    // MARK: - Run loop

    /// Readies the executor for another run loop after a previous one stopped.
    func prepareForRun() {
        condition.lock()
        stopRequested.store(false, ordering: .releasing)
        wallAnchor = pace.map { WallAnchor(pace: $0) }
        condition.unlock()
    }

    /// Forgets every queued timer's call and every job and handover still waiting, when the
    /// ``Simulation`` that runs this executor goes: nothing can fire them any more, and a timer's
    /// call may hold what holds the executor (a link and its device, its flash) in a cycle that
    /// would outlive the world. Sleeping tasks are not resumed; they go with their world.
    /// Not while a run loop runs.
    func discardPending() {
        condition.lock()
        precondition(owner.load(ordering: .acquiring) == 0, "a simulation went while its run loop ran")
        let discarded = (timers, actions, inbox)
        timers = TimerQueue()
        actions.removeAll()
        cancelledBeforeArming.removeAll()
        inbox.removeAll()
        inboxPending.store(false, ordering: .releasing)
        jobs.removeAll()
        jobsHead = 0
        condition.unlock()
        // The calls are released here, outside the lock: a link released with its last timer
        // releases the executor's other holders, never the executor itself (its caller holds it).
        withExtendedLifetime(discarded) {}
    }

    /// Asks the run loop to return once the job queue is empty.
    func stop() {
        stopRequested.store(true, ordering: .releasing)
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    /// What the run loop should do next.
    private enum Step {
        case run(UnownedJob)
        case fire(TimerAction)
        case stop
        case deadlock
    }

    /// Runs jobs and timers on the calling thread until ``stop()``.
    ///
    /// - Parameter onDeadlock: called (on this thread) when no job is runnable, no timer is set
    ///   and nothing arrived from another thread for a while; it should cancel the work.
    func runLoop(onDeadlock: () -> Void) {
        let executor = asUnownedTaskExecutor()
        owner.store(CurrentThread.id, ordering: .releasing)
        defer { owner.store(0, ordering: .releasing) }
        while true {
            switch nextStep() {
            case .run(let job):
                job.runSynchronously(on: executor)
            case .fire(.resume(let continuation)):
                continuation.resume()
            case .fire(.call(let action)):
                fire(action)
            case .deadlock:
                onDeadlock()
            case .stop:
                return
            }
        }
    }

    /// The run loop's next step; takes the lock only when another thread handed something over,
    /// a sleep's timer fires, or there is nothing to do but wait.
    private func nextStep() -> Step {
        while true {
            if jobsHead < jobs.count {
                let job = jobs[jobsHead]
                jobsHead += 1
                if jobsHead > 1024, jobsHead * 2 > jobs.count {
                    jobs.removeFirst(jobsHead)
                    jobsHead = 0
                }
                return .run(job)
            }
            // Read before the inbox: what was handed over before a stop is run before stopping.
            let stopping = stopRequested.load(ordering: .acquiring)
            if inboxPending.load(ordering: .acquiring) {
                drainInbox()
                continue
            }
            if stopping { return .stop }
            if let deadline = timers.firstDeadline {
                if let wait = wallDelay(until: deadline) {
                    // Following the wall clock: sleep, but wake for work from other threads.
                    condition.lock()
                    if inbox.isEmpty && !stopRequested.load(ordering: .acquiring) {
                        _ = condition.wait(until: Date(timeIntervalSinceNow: wait))
                    }
                    condition.unlock()
                    continue
                }
                guard let action = takeFirstTimer() else { continue }
                return .fire(action)
            }
            // Nothing runnable and no timer: only another thread can make progress now.
            condition.lock()
            if inbox.isEmpty && !stopRequested.load(ordering: .acquiring) {
                let woken = condition.wait(until: Date(timeIntervalSinceNow: 2))
                if !woken && inbox.isEmpty && !stopRequested.load(ordering: .acquiring) {
                    condition.unlock()
                    return .deadlock
                }
            }
            condition.unlock()
        }
    }

    /// Takes the earliest timer out of the queue and moves virtual time to it; `nil` when it was
    /// a sleep cancelled since (nothing to fire, the clock unmoved).
    private func takeFirstTimer() -> TimerAction? {
        let entry = timers.removeFirst()
        let action: TimerAction
        if let call = entry.call {
            action = .call(call)
        } else {
            condition.lock()
            let continuation = actions.removeValue(forKey: entry.id)
            condition.unlock()
            guard let continuation else { return nil }
            action = continuation
        }
        if entry.deadline > virtualNow { virtualNow = entry.deadline }
        return action
    }

    // MARK: - Running ahead

    /// Fires timers on the calling job's own stack, exactly as the run loop would fire them next,
    /// until `answered()` holds; returns whether it does.
    ///
    /// A task that would suspend until timers bring its answer (a simulated request waiting for
    /// the link's events and the device's reply) calls this first: while nothing else is
    /// runnable, the run loop's next steps are those timers, so firing them here changes nothing
    /// in what happens or when, and the task goes on without suspending and being resumed
    /// (decision 0069). It stops, returning `false`, as soon as the run loop would do anything
    /// else first: a job is runnable (a timer resumed a task), another thread handed something
    /// over, a stop was asked, no timer is set, or the executor follows the wall clock; the
    /// caller then suspends as it would have, and the run loop carries on from there. Off the
    /// run loop's thread, or inside another run-ahead (a timer's call that requests), it fires
    /// nothing.
    ///
    /// With a `bound`, it also stops before a timer due at or after it: a caller whose wait has
    /// a deadline passes it, so that running ahead never carries virtual time past the timeout
    /// the caller sets once it suspends (decision 0071).
    ///
    /// With `forAnswer`, the caller vouches that `answered()` turns true only when its link keeps
    /// an answer for it (a simulated request or blocked write): a link's timer may then take
    /// its next steps at once while it has kept none (``advance(toNextStepAt:)``). A condition
    /// that anything else can satisfy (a notification buffered, time passing) leaves it `false`.
    func runAhead(before bound: Duration? = nil, forAnswer: Bool = false, until answered: () -> Bool) -> Bool {
        guard onRunLoopThread, wallAnchor == nil, !runningAhead else { return answered() }
        runningAhead = true
        aheadForAnswer = forAnswer
        aheadBound = bound?.attoseconds
        defer {
            runningAhead = false
            aheadForAnswer = false
            aheadBound = nil
        }
        let limit = aheadBound
        while !answered() {
            guard jobsHead == jobs.count, !inboxPending.load(ordering: .acquiring), !stopRequested.load(ordering: .acquiring),
                let next = timers.firstDeadlineAttoseconds, limit.map({ next < $0 }) ?? true
            else { return false }
            switch takeFirstTimer() {
            case .call(let action): fire(action)
            case .resume(let continuation): continuation.resume()
            case nil: continue
            }
        }
        return true
    }

    /// The first step of a run ahead for an answer, taken before the run starts by a caller
    /// that holds its own lock around it: `step` is what a timer the caller would set now for
    /// `deadline` (attoseconds) would call (a link's first event for the request that waits).
    /// When that timer would be the run loop's very next step, and a run ahead for an answer may
    /// start here (``runAhead(before:forAnswer:until:)`` with `forAnswer` and no bound), virtual
    /// time moves to `deadline` and `step` runs at once, marked as that run's timer call
    /// (decision 0073), and the answer is `true`. Otherwise nothing is done and the caller sets
    /// the timer.
    // Inlined into the link's request, so that `step` is a direct call there: as a closure
    // handed over, its context (the link) was retained and released around every request.
    @inline(__always)
    func takeFirstStepAhead(at deadline: Int128, _ step: () -> Void) -> Bool {
        guard takesStepsAtOnce, onRunLoopThread, wallAnchor == nil, !runningAhead, isNextStep(deadline) else { return false }
        runningAhead = true
        aheadForAnswer = true
        takeStep(at: deadline)
        fire(step)
        runningAhead = false
        aheadForAnswer = false
        return true
    }

    /// Calls a timer's action, marked as one (``advance(toNextStepAt:)``).
    @inline(__always)
    private func fire(_ action: () -> Void) {
        let outer = firingTimer
        firingTimer = true
        action()
        firingTimer = outer
    }

    // MARK: - Taking a step at once

    /// From a timer's call: whether a timer set now for `deadline` would be the run loop's very
    /// next step, and if so virtual time moved to `deadline`, so that the caller does that step's
    /// work at once instead of setting the timer (decision 0073).
    ///
    /// It would be when nothing else can come first: no job is runnable, nothing was handed over
    /// from another thread, no stop was asked, the executor does not follow the wall clock, and
    /// every timer set is due *after* `deadline` (at the same instant one set earlier would fire
    /// first: that is `false` too). While running ahead, also `deadline` before the run's bound
    /// and the run ``runAhead(before:forAnswer:until:)`` `forAnswer`, whose caller checks that
    /// it has kept no answer first: the run's condition is not asked between the steps taken so.
    /// Anywhere else (a job, another thread) it is `false` and changes nothing.
    func advance(toNextStepAt deadline: Duration) -> Bool {
        let target = deadline.attoseconds
        guard takesStepsAtOnce, onRunLoopThread, firingTimer, wallAnchor == nil, !runningAhead || aheadForAnswer, isNextStep(target)
        else { return false }
        takeStep(at: target)
        return true
    }

    /// Whether a timer due at `deadline` (attoseconds) would be the run loop's next step: no job
    /// is runnable, nothing was handed over, no stop was asked, every timer set is due later, and
    /// it is before a run ahead's bound. On the run loop's thread.
    @inline(__always)
    private func isNextStep(_ deadline: Int128) -> Bool {
        jobsHead == jobs.count && !inboxPending.load(ordering: .acquiring) && !stopRequested.load(ordering: .acquiring)
            && (timers.firstDeadlineAttoseconds.map { $0 > deadline } ?? true) && (aheadBound.map { deadline < $0 } ?? true)
    }

    /// Moves virtual time to a step taken at once (`deadline` in attoseconds: `Duration`'s
    /// comparison is a call into the standard library).
    @inline(__always)
    private func takeStep(at deadline: Int128) {
        if deadline > virtualNow.attoseconds { virtualNow = Duration(attoseconds: deadline) }
        stepsTakenAtOnce &+= 1
    }

    /// Seconds of wall time to wait before virtual time may reach `deadline`, or `nil`.
    private func wallDelay(until deadline: Duration) -> Double? {
        guard let wallAnchor else { return nil }
        return wallAnchor.delay(until: deadline, virtualNow: virtualNow)
    }
}

/// The pairing of the wall clock and virtual time a paced executor follows, made at the first
/// wait of a run.
private final class WallAnchor {
    let pace: Double
    var anchor: (wall: ContinuousClock.Instant, virtual: Duration)?

    init(pace: Double) { self.pace = pace }

    /// Seconds of wall time to wait before virtual time may reach `deadline`, or `nil`.
    func delay(until deadline: Duration, virtualNow: Duration) -> Double? {
        let wallNow = ContinuousClock.now
        guard let anchor else {
            anchor = (wallNow, virtualNow)
            return delay(until: deadline, virtualNow: virtualNow)
        }
        let target = anchor.wall + (deadline - anchor.virtual) / pace
        guard target > wallNow else { return nil }
        return (target - wallNow).seconds
    }
}
