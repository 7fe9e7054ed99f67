import FuzzSupport
import OTACore
import OTAProtocolNordicDFU

/// A Nordic DFU zip's `manifest.json`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDFUManifest(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    consume(attempt({ try DFUManifest(json: data, name: "manifest.json") }))
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzDFUManifest) }
}
