import Foundation
import OTACore

/// How a protocol's packets travel on a serial line; the protocol supplies it (MCUmgr: Zephyr's
/// base64 lines with markers and a CRC-16), so this target imports no protocol.
public struct SerialFraming: Sendable {
    /// The length of the packet bytes start with, to join a protocol's writes into packets.
    public var packetLength: PacketAssembler.PacketLength
    /// One packet as the bytes sent on the line.
    public var encode: @Sendable (Data) -> Data
    /// A fresh decoder for one connection: bytes from the line in, whole packets out (bad frames
    /// dropped: the protocol's timeout reports a packet that never came).
    public var makeDecoder: @Sendable () -> @Sendable (Data) -> [Data]
    /// What the framing adds that the device's receive buffer holds besides the packet
    /// (``LinkParameters/packetOverhead``).
    public var bufferOverhead: Int

    /// A framing.
    public init(
        packetLength: @escaping PacketAssembler.PacketLength, encode: @escaping @Sendable (Data) -> Data,
        makeDecoder: @escaping @Sendable () -> @Sendable (Data) -> [Data], bufferOverhead: Int = 0
    ) {
        self.packetLength = packetLength
        self.encode = encode
        self.makeDecoder = makeDecoder
        self.bufferOverhead = bufferOverhead
    }
}
