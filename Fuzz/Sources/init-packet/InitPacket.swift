import FuzzSupport
import OTACore
import OTAProtocolNordicDFU

/// A Nordic init packet (`.dat`, protobuf): the decoder the package reader and the device
/// model share.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInitPacket(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    consume(attempt({ try InitPacket(bytes: data, name: "fuzz.dat") }))
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzInitPacket) }
}
