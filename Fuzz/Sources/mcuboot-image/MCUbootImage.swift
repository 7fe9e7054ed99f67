import Foundation
import FuzzSupport
import OTAProtocolMCUmgr

/// An MCUboot image as `imgtool` writes it: `MCUbootImage(parsing:)` and its report. A mutated
/// image almost always fails at its SHA-256 TLV, which would leave everything after that check
/// unfuzzed; so an input refused only for its hash is parsed again with the declared digest
/// replaced by the computed one (as a real, freshly built image would carry).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMCUbootImage(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    consume(MCUbootImage.hasMagic(data))
    do {
        try inspect(MCUbootImage(parsing: data))
    } catch {
        describe(error)
        guard case .hashMismatch(let declared, let computed) = error,
            let range = data.range(of: declared, options: .backwards)
        else { return 0 }
        var repaired = data
        repaired.replaceSubrange(range, with: computed)
        if let image = attempt({ try MCUbootImage(parsing: repaired) }) { inspect(image) }
    }
    return 0
}

func inspect(_ image: MCUbootImage) {
    consume(image.report)
    consume(image.securityCounter)
    consume(image.version)
}

@main
enum Main {
    static func main() { runFuzzer(fuzzMCUbootImage) }
}
