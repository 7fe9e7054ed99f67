import Foundation
import FuzzSupport
import OTACore
import OTATransportSimulator

/// A recorded update (`ota update --trace FILE`, JSON lines), as `--device replay:FILE` reads
/// it: `Trace(lines:name:)`, then the replay built from it and asked for its verdict. Traces
/// come from bug reports, so they are outside input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTrace(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    guard let trace = attempt({ try Trace(lines: data, name: "fuzz.jsonl") }) else { return 0 }
    consume(trace.result)
    let replay = TraceReplay(trace, name: "fuzz.jsonl", clock: ContinuousClock(), executor: nil)
    consume(replay.verdict)
    consume(replay.unplayed)
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzTrace) }
}
