/// Faults the simulated link injects into the writes it carries to a device, for tests.
///
/// Indices count data writes (writes without response) delivered to the device since the
/// device was made, from 0, across connections.
public struct LinkFaults: Sendable, Hashable {
    /// Writes that are lost on the way (as if the controller dropped them).
    public var dropWrites: Set<Int> = []
    /// Writes whose first byte is flipped on the way (as a corrupting buffer would).
    public var corruptWrites: Set<Int> = []
    /// Drop the link once the device has received this many bytes of data writes in all.
    public var disconnectAfterBytes: Int?

    /// No faults.
    public init() {}
}
