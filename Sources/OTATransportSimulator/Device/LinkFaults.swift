/// Faults the simulated link injects into the writes it carries to a device, for tests.
///
/// Indices count data writes (writes without response) arriving at the device since it was
/// made, from 0, across connections; byte thresholds count the data bytes delivered, also across
/// connections. Each threshold fires once.
public struct LinkFaults: Sendable, Hashable {
    /// Writes that are lost on the way (as if the controller dropped them).
    public var dropWrites: Set<Int> = []
    /// Writes whose last byte is flipped on the way (as a corrupting buffer would).
    public var corruptWrites: Set<Int> = []
    /// Writes delivered twice.
    public var duplicateWrites: Set<Int> = []
    /// Writes delivered after the write that follows them.
    public var reorderWrites: Set<Int> = []
    /// Drop the link once the device has received this many data bytes (each value once).
    public var disconnectAtBytes: [Int] = []
    /// Reboot the device once it has received this many data bytes (each value once).
    public var rebootAtBytes: [Int] = []
    /// From this many data bytes on, the device stops taking packets without dropping the link
    /// (a hung firmware), until the link goes down.
    public var stallAtBytes: Int?
    /// From this many data bytes on, the link's data path is gone while requests still get their
    /// answers, and the link drops ``dyingLinkDuration`` later (once): what a central sees behind
    /// bluetoothd's ~2 s disconnect timer. Writes without response are lost on the way; writes with
    /// response, reads and notifications still go through until the drop.
    public var dyingLinkAtBytes: Int?
    /// How long a dying link keeps answering before it drops. Default 2 s (bluetoothd's
    /// disconnect timer).
    public var dyingLinkDuration: Duration = .seconds(2)
    /// From this many data bytes on, every erase and write of the device's flash fails, as worn or
    /// write-protected flash does (``SimulatedFlash/injectFailure(_:)``, set just before the write
    /// that reaches the threshold is handed to the device model, so that write's flash work fails
    /// too). The flash keeps failing across reconnections and reboots; the device model reports it
    /// as its protocol says.
    public var failFlashAtBytes: Int?

    /// No faults.
    public init() {}
}
