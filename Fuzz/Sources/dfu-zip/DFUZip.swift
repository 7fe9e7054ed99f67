import FuzzSupport
import OTACore
import OTAProtocolNordicDFU

/// A Nordic DFU `.zip` as `ota update` and `ota inspect` read it: the archive, every entry
/// extracted (under the archive's caps), the package built from it, and the inspection.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDFUZip(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    if let archive = attempt({ try ZipArchive(data: data, name: "fuzz.zip") }) {
        for entry in archive.entries {
            consume(attempt({ try archive.contents(of: entry) }))
        }
    }
    consume(attempt({ try DFUPackage(zipData: data, name: "fuzz.zip") }))
    if let inspection = attempt({ try DFUPackage.inspect(zipData: data, name: "fuzz.zip") }) { describe(inspection) }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzDFUZip) }
}
