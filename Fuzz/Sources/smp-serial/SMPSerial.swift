import Foundation
import FuzzSupport
import OTAProtocolMCUmgr

/// SMP's serial framing (Zephyr's console lines): the input fed to the decoder in pieces whose
/// sizes the first byte chooses, as a UART delivers them; every message it completes is decoded
/// as SMP, and encoded again, which must decode to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSMPSerial(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    guard let first = data.first else { return 0 }
    let pieceLength = Int(first % 128) + 1
    var decoder = SMPSerialDecoder()
    var rest = data.dropFirst()
    while !rest.isEmpty {
        let piece = Data(rest.prefix(pieceLength))
        rest = rest.dropFirst(piece.count)
        for message in decoder.append(piece).messages {
            consume(attempt({ try SMPMessage(decoding: message) }))
            var again = SMPSerialDecoder()
            let decoded = again.append(SMPSerialFraming.encode(message)).messages
            precondition(decoded == [message], "an encoded message does not decode to itself")
        }
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzSMPSerial) }
}
