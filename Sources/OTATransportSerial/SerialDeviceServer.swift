import Foundation
import OTACore
import OTATransportPacketLink

/// Serves a ``DeviceModel``'s characteristic on a serial line (the controlling side of a
/// ``PseudoTerminal``, or a real port): decoded packets are writes, what the model notifies is
/// joined into packets and framed back. A reboot restarts the model after its delay.
public final class SerialDeviceServer: Sendable {
    private let line: SerialLine
    private let host: PacketLinkHost
    /// The model's flash.
    public var flash: any FlashStorage { host.flash }

    /// A server on `descriptor`, which it owns from now on.
    public init(model: any DeviceModel, characteristic: CharacteristicID, flash: any FlashStorage, descriptor: Int32, framing: SerialFraming) {
        let line = SerialLine(port: SerialPort(descriptor: descriptor, outlivesHangUp: true), framing: framing, path: "the served line")
        self.line = line
        host = PacketLinkHost(
            model: model, characteristic: characteristic, flash: flash, packetLength: framing.packetLength, send: { _ = line.send($0) })
    }

    /// Starts serving on a thread of its own.
    public func start() {
        host.start()
        line.startReceiving({ [host] in host.received($0) }, ended: { _ in })
    }

    /// Stops serving.
    public func stop() {
        line.port.close()
        host.stop()
    }
}
