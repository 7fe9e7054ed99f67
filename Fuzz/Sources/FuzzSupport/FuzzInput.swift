import CFuzzerDriver
import Foundation

/// Runs libFuzzer with the process's arguments and `test` as the function under test, then
/// exits with libFuzzer's status. A target's `main` calls it: SwiftPM gives every executable
/// its own entry point, so libFuzzer's `main` is not linked in.
public func runFuzzer(_ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, test))
}


/// The bytes libFuzzer hands a target, as the `Data` the parsers take (copied: the fuzzer owns
/// its buffer).
public func fuzzInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> Data {
    guard let start, count > 0 else { return Data() }
    return Data(bytes: start, count: count)
}

/// Uses a parser's result so that the optimiser keeps the work and its description code runs
/// too (descriptions of decoded values end up in messages).
@inline(never)
public func consume(_ value: some Any) {
    blackHole(String(describing: value).utf8.count)
}

@inline(never)
private func blackHole(_ value: Int) {
    if value == Int.min { print("unreachable") }
}

/// Checks that a decoded value survives its own encoding: decoding `value.encoded` must give
/// `value` back (a decoder and an encoder that disagree would make a device and a client
/// disagree). A failure stops the fuzzer with the input that caused it.
public func checkRoundTrip<Value: Equatable>(_ value: Value, encoded: Data, decode: (Data) -> Value?, _ what: String) {
    guard let again = decode(encoded) else {
        fatalError("\(what): \(value) encodes to \(Array(encoded)), which does not decode")
    }
    guard again == value else {
        fatalError("\(what): \(value) encodes to \(Array(encoded)), which decodes to \(again)")
    }
}
