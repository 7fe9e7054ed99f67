import Foundation
import FuzzSupport
import OTACore

/// Our package directory's `manifest.json`, opened the only way the tool opens it: from a
/// directory. The input is the manifest; the directory also holds `app.bin` (4 bytes, "OTA\n")
/// so that manifests naming it get as far as the size and SHA-256 checks. The directory is in
/// memory (/dev/shm) where there is one: a disk makes every execution a file write.
let directory: URL = {
    let memory = URL(fileURLWithPath: "/dev/shm")
    let parent = FileManager.default.fileExists(atPath: memory.path) ? memory : FileManager.default.temporaryDirectory
    let url = parent.appendingPathComponent("ota-fuzz-package-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    try? Data("OTA\n".utf8).write(to: url.appendingPathComponent("app.bin"))
    atexit { try? FileManager.default.removeItem(at: directory) }
    return url
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPackageManifest(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    let manifest = directory.appendingPathComponent(FirmwarePackage.manifestName)
    guard (try? data.write(to: manifest)) != nil else { return 0 }
    if let package = attempt({ try FirmwarePackage.open(directory) }) {
        _ = package.hardwareCompatibility(checkedByFamily: false)
        consume(attempt({ try package.checkCompatibility(with: nil, device: "fuzz") }))
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzPackageManifest) }
}
