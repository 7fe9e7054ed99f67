/// The engine's tunables: the timeouts of the waits the engine bounds, the stall watchdog, progress
/// pacing, resume and the chunk cap. A protocol's own waits take their durations from its declared
/// parameters.
public struct UpdateConfiguration: Sendable, Hashable {
    /// How long to wait for the link to come up. Default 15 s.
    public var connectTimeout: Duration = .seconds(15)
    /// How long to wait for the device to answer a command (a write response or a notification).
    /// Default 10 s.
    public var responseTimeout: Duration = .seconds(10)
    /// How long to wait for the device's verdict on the whole image, which includes its final
    /// flash work. Default 30 s.
    public var verifyTimeout: Duration = .seconds(30)
    /// A transfer that moves no byte for this long fails as stalled. Detection happens between
    /// one and two stall timeouts after the last byte. Default 5 s.
    public var stallTimeout: Duration = .seconds(5)
    /// Minimum time between two progress events. Default 100 ms.
    public var progressInterval: Duration = .milliseconds(100)
    /// The window over which ``UpdateProgress/currentRate`` is measured. Default 1 s.
    public var rateWindow: Duration = .seconds(1)
    /// How to reconnect after a lost link, for protocols that can resume.
    public var resume = ResumePolicy()
    /// An upper bound on the payload per write, below what the link negotiated; `nil` uses the
    /// link's maximum. Useful when a stack carries less than it advertises.
    public var maximumChunkSize: Int?
    /// What to read and check after connecting and before the protocol's first write: the
    /// battery level and the hardware revision (``Preflight``). By default it reads and checks
    /// nothing it is not told to.
    public var preflight = PreflightPolicy()
    /// How long to listen for a device that restarts elsewhere (an application that jumped to its
    /// bootloader under another address or name) before giving up. Default 10 s.
    public var reappearanceTimeout: Duration = .seconds(10)
    /// Seeds the random choices an update makes (the name a bootloader is told to advertise),
    /// for a run that must repeat exactly (the simulator's `--seed`); `nil` (default) draws them
    /// from the system's random source.
    public var randomSeed: UInt64?

    /// The defaults.
    public init() {}
}
