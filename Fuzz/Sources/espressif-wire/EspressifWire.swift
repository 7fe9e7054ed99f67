import Foundation
import FuzzSupport
import OTAProtocolEspressif

/// Espressif BLE OTA's wire: the command and sector acknowledgements a device sends (the client
/// decodes them) and the commands and firmware packets a client writes (the device model decodes
/// them).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEspressifWire(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    if let ack = EspressifCommandAck(decoding: data) {
        describe(ack)
        checkRoundTrip(ack, encoded: ack.encoded, decode: EspressifCommandAck.init(decoding:), "EspressifCommandAck")
    }
    if let ack = EspressifSectorAck(decoding: data) {
        describe(ack)
        checkRoundTrip(ack, encoded: ack.encoded, decode: EspressifSectorAck.init(decoding:), "EspressifSectorAck")
    }
    if let packet = EspressifFirmwarePacket(decoding: data) {
        consume(packet)
        checkRoundTrip(packet, encoded: packet.encoded, decode: EspressifFirmwarePacket.init(decoding:), "EspressifFirmwarePacket")
    }
    for strict in [true, false] {
        if let command = EspressifCommand(decoding: data, strict: strict) { describe(command) }
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzEspressifWire) }
}
