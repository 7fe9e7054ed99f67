import Foundation
import FuzzSupport
import OTAProtocolEspressif

/// An ESP-IDF app image as esptool writes it: `EspressifAppImage(parsing:name:)`, read before
/// connecting and by `ota inspect`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEspressifAppImage(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    consume(EspressifAppImage.looksLikeAppImage(data))
    if let image = attempt({ try EspressifAppImage(parsing: data, name: "app.bin") }) {
        consume(image)
        consume(image.appDescription)
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzEspressifAppImage) }
}
