import Foundation
import FuzzSupport
import OTACore

/// What a device says in its Device Information strings and Battery Level, as the preflight
/// takes it (``Preflight/read(over:)``): the bytes as UTF-8, trimmed, escaped and cut for
/// messages, then checked against hardware rules and a battery minimum. The input is split in
/// five at 0xFF bytes: manufacturer, model, hardware revision, firmware revision, battery level.
let policy: PreflightPolicy = {
    var policy = PreflightPolicy()
    policy.minimumBattery = .init(percent: 30, source: "catalog")
    policy.hardware = [
        HardwareCompatibility(.revisions(["B2", "rev-c"]), source: "manifest.json hardware", whenUnknown: .refuse),
        HardwareCompatibility(.integer(52), source: "app.dat", whenUnknown: .note("not checked")),
    ]
    return policy
}()
let preflight = Preflight(policy: policy, responseTimeout: .seconds(1), clock: ContinuousClock())

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceInformation(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    let fields = data.split(separator: 0xFF, maxSplits: 4, omittingEmptySubsequences: false)
    func text(_ index: Int) -> String? {
        guard index < fields.count else { return nil }
        let shown = MessageText.name(
            String(decoding: fields[index], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: "\0")))
        )
        return shown.isEmpty ? nil : shown
    }
    var information = DeviceInformation(
        manufacturer: text(0), modelNumber: text(1), hardwareRevision: text(2), firmwareRevision: text(3)
    )
    if fields.count > 4, fields[4].count == 1, let level = fields[4].first, level <= 100 {
        information.batteryLevel = Int(level)
    }
    consume(information.summary)
    for rule in policy.hardware {
        if let revision = information.hardwareRevision { consume(rule.verdict(for: revision)) }
    }
    consume(preflight.check(information))
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzDeviceInformation) }
}
