import Foundation

/// Joins a byte stream cut at arbitrary points (a protocol's writes, a device model's
/// notifications) into whole packets, each of which a packet transport (a datagram, a framed
/// serial line) sends alone.
///
/// The packet format is not this type's: ``packetLength`` reads the length of the packet at the
/// start of the bytes (SMP: its 8-byte header plus the header's length field), or `nil` while
/// too few bytes are there to tell.
public struct PacketAssembler: Sendable {
    /// The length of the packet the bytes start with, header included; `nil` when they are too
    /// short to tell.
    public typealias PacketLength = @Sendable (Data) -> Int?

    private let packetLength: PacketLength
    private var buffer = Data()

    /// An empty assembler.
    public init(packetLength: @escaping PacketLength) {
        self.packetLength = packetLength
    }

    /// Bytes held that are not yet a whole packet.
    public var pending: Int { buffer.count }

    /// Adds `bytes` and returns the packets they complete, in order.
    public mutating func append(_ bytes: Data) -> [Data] {
        buffer.append(bytes)
        var packets: [Data] = []
        while let length = packetLength(buffer), length > 0, buffer.count >= length {
            packets.append(Data(buffer.prefix(length)))
            buffer = Data(buffer.dropFirst(length))
        }
        return packets
    }

    /// Drops a partial packet.
    public mutating func reset() { buffer = Data() }
}
