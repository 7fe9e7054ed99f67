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

/// Keeps a parser's result alive, so that the optimiser keeps the work.
@inline(never)
public func consume<Value>(_ value: Value) {
    withExtendedLifetime(value) {}
}

/// Renders a decoded value's own description, as messages and logs do (not a reflection
/// dump: that is slow and not what the tool prints).
@inline(never)
public func describe(_ value: some CustomStringConvertible) {
    consume(value.description.utf8.count)
}

/// The value `parse` returns, or `nil` when it throws; the error's message is rendered, as the
/// tool would print it (messages quote what the input said).
public func attempt<Value>(_ parse: () throws -> Value) -> Value? {
    do {
        return try parse()
    } catch {
        consume(String(describing: error).utf8.count)
        return nil
    }
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
