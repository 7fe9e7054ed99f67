import Foundation
import FuzzSupport
import OTAProtocolMCUmgr

/// CBOR as an SMP server sends it (RFC 8949, bounded depth and item count), decoded, encoded
/// again and that encoding decoded (definite lengths now, so it must not be refused).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCBOR(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    guard let value = attempt({ try CBORDecoder().decode(data) }) else { return 0 }
    let encoded = value.encoded
    do {
        _ = try CBORDecoder().decode(encoded)
    } catch {
        fatalError("CBOR: \(value) decodes, but its encoding \(Array(encoded)) does not: \(error)")
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzCBOR) }
}
