/// What a finished update did.
public struct UpdateReport: Sendable, Hashable {
    /// Bytes in the image.
    public var imageSize: Int
    /// CRC-32 of the image.
    public var imageCRC32: UInt32
    /// The link the update ran over.
    public var link: LinkParameters
    /// Payload bytes per data write.
    public var chunkSize: Int
    /// From the start of the connection to the device's verdict, on the engine's clock.
    public var duration: Duration
    /// Time spent connecting (link setup, discovery, MTU exchange, the preflight's reads), part
    /// of ``duration``.
    public var connectDuration: Duration
    /// Bytes written to the link in all, including any re-sent.
    public var bytesSent: Int
    /// Times the update continued where the device stood: after each reconnection, and once
    /// more when this run started from a session an earlier run left on the device.
    public var resumes: Int
    /// Bytes of the image the device held before this run sent any data (from an earlier run);
    /// 0 for an update that started from scratch.
    public var bytesHeldAtStart: Int = 0
    /// Times the engine reconnected and started over from byte 0, for a protocol that cannot
    /// resume.
    public var restarts: Int = 0
    /// Image data writes the protocol made (``UpdateContext/writeData(_:to:covering:)``, on
    /// every connection, re-sent ones included): what a host cost per chunk is divided by.
    public var dataWrites: Int = 0

    /// When the first data write of the update began, on the same clock as ``duration``; `nil`
    /// when no data was written (the device already held the image).
    public var transferStart: Duration?

    /// Time from the link being up to the device's verdict: what the protocol itself took.
    public var protocolDuration: Duration { duration - connectDuration }

    /// Time from the first data write to the device's verdict: the transfer, without the setup
    /// before it (connection, discovery, the protocol's opening requests such as Nordic's Select,
    /// init packet and first-object delay) and without the link coming down after it.
    /// ``protocolDuration`` when no data was written.
    public var transferDuration: Duration {
        guard let transferStart, transferStart <= duration else { return protocolDuration }
        return duration - transferStart
    }

    /// Image bytes delivered per second over ``transferDuration`` (bytes the device held from an
    /// earlier run do not count): the rate of the transfer itself, what a side-by-side comparison
    /// with another client over the same link measures. ``goodput`` is the same bytes over
    /// ``protocolDuration``.
    public var transferRate: Double {
        transferDuration > .zero ? Double(imageSize - bytesHeldAtStart) / transferDuration.seconds : 0
    }

    /// Image bytes delivered per second over ``protocolDuration``: every command round trip,
    /// flash wait and retransmission counts, connection setup does not. Bytes the device held
    /// from an earlier run (``bytesHeldAtStart``) were not sent in that span and do not count.
    public var goodput: Double {
        protocolDuration > .zero ? Double(imageSize - bytesHeldAtStart) / protocolDuration.seconds : 0
    }
}
