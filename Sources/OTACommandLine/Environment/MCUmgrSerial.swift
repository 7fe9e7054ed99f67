import Foundation
import OTAProtocolMCUmgr
import OTATransportSerial

/// SMP's serial framing (Zephyr's console transport) as the serial transport takes it.
package enum MCUmgrSerial {
    /// Packets joined by the SMP header's length, framed as base64 lines with markers and a CRC-16.
    package static let framing = SerialFraming(
        packetLength: SMPHeader.messageLength(of:), encode: { SMPSerialFraming.encode($0) },
        makeDecoder: {
            let decoder = SMPSerialStreamDecoder()
            return { decoder.messages(from: $0) }
        }, bufferOverhead: SMPSerialFraming.bufferOverhead)
}
