/// How long a device's flash takes to erase and program.
public struct FlashTiming: Sendable, Hashable {
    /// Erase granularity in bytes.
    public var sectorSize: Int
    /// Time to erase one sector.
    public var sectorEraseTime: Duration
    /// Programming speed in bytes per second.
    public var writeBytesPerSecond: Double

    /// Creates flash timing.
    public init(sectorSize: Int, sectorEraseTime: Duration, writeBytesPerSecond: Double) {
        self.sectorSize = sectorSize
        self.sectorEraseTime = sectorEraseTime
        self.writeBytesPerSecond = writeBytesPerSecond
    }

    /// Time to program `count` bytes.
    public func writeTime(_ count: Int) -> Duration {
        .exactNanoseconds(Int64((Double(count) / writeBytesPerSecond * 1e9).rounded()))
    }
}
