import Foundation
import FuzzSupport
import OTACore
import OTAProtocolFramed
import OTAProtocolGeneric
import OTAProtocolNordicDFU

/// A user's device catalog (`--catalog`, `~/.config/ota/devices.json`) against the shipped
/// protocols, then laid over the built-in catalog and asked for a family the way a scan does.
let registry = ProtocolRegistry([GenericProtocol.descriptor, FramedProtocol.descriptor, NordicDFUProtocol.descriptor])
let builtIn = try? DeviceCatalog(defaultsOf: registry, source: "built-in")
let advertisement = Advertisement(
    name: "Thermo-42", serviceUUIDs: [GATTUUID("FE59")!], manufacturerData: [0x59: Data([0x01, 0x02, 0x03])]
)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceCatalog(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    guard let catalog = attempt({ try DeviceCatalog.parse(data, source: "devices.json", registry: registry) }) else { return 0 }
    consume(attempt({ try catalog.family(for: advertisement, device: "fuzz") }))
    if let builtIn, let merged = attempt({ try builtIn.overridden(by: catalog) }) {
        consume(attempt({ try merged.family(for: advertisement, device: "fuzz") }))
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzDeviceCatalog) }
}
