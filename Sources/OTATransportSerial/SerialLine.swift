import Foundation
import OTATransportPacketLink

/// Whole packets on a serial port: each framed on the way out, the bytes that come decoded into
/// packets on the way in (a fresh decoder each time receiving starts).
struct SerialLine: PacketChannel {
    let port: SerialPort
    let framing: SerialFraming
    /// The device path, for messages.
    let path: String

    func send(_ packet: Data) -> String? {
        port.write(framing.encode(packet)).map { "cannot write to \(path): \($0)" }
    }

    func startReceiving(_ packet: @escaping @Sendable (Data) -> Void, ended: @escaping @Sendable (String?) -> Void) {
        let decode = framing.makeDecoder()
        port.startReceiving({ bytes in decode(bytes).forEach(packet) }, ended: ended)
    }

    func close() async {
        await port.closeAndWait()
    }
}
