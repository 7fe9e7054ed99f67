/// Counters of what a simulated link carried.
public struct LinkStatistics: Sendable, Hashable {
    /// Connection events that carried at least one packet.
    public var connectionEvents = 0
    /// LL packet pairs sent, including retransmissions.
    public var packetPairs = 0
    /// Packet pairs lost on air and sent again.
    public var retransmissions = 0
    /// Writes without response accepted into the central's queue.
    public var writesQueued = 0
    /// Writes without response the central's stack dropped because its queue was full.
    public var writesDropped = 0
    /// Times a writer had to wait for room in the queue (back-pressure at work).
    public var writerWaits = 0
    /// ATT value bytes delivered to the device by writes without response.
    public var dataBytesDelivered = 0
    /// Notifications delivered to the central.
    public var notificationsDelivered = 0
    /// Times the device's controller refused packets because flash work was backed up.
    public var flowControlStalls = 0

    /// All zero.
    public init() {}
}
