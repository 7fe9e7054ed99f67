import Foundation
import FuzzSupport
import OTACore
import OTATrust

/// A key file a user passes (`--key FILE`, a family's `keys`): `TrustedKey(pem:source:)`, which
/// hands the bytes to libcrypto's PEM reader; a key read is then asked to verify the input's
/// tail as a signature of its head.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTrustedKey(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    if let key = attempt({ try TrustedKey(pem: data, source: "key.pem") }) {
        describe(key)
        consume(key.subjectPublicKeyInfo)
        let split = data.count / 2
        consume(key.verifies(data.suffix(from: data.startIndex + split), of: data.prefix(split)))
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzTrustedKey) }
}
