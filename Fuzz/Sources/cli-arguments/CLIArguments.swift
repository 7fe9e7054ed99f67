import Foundation
import FuzzSupport
import OTACommandLine

/// `ota`'s command line (decision 0056): `CommandLineTool.check(_:)`, the tool's argument parser
/// and the checks each command makes before anything connects, on a random argument vector.
/// Nothing runs: no update, no device, no file.
///
/// The input: the arguments, separated by NULs (the first names the command).
///
/// Oracles: an error is one line that ends with the command's help hint; an accepted option given
/// as `--name=value` (before any `--`) keeps as its value exactly what follows the first `=`
/// scalar, so a combining mark after the `=` cannot move the split.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCLIArguments(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let arguments = fuzzInput(start, count).split(separator: 0, omittingEmptySubsequences: false).prefix(32).map {
        String(decoding: $0, as: UTF8.self)
    }
    let checked = CommandLineTool.check(arguments)
    if let error = checked.error {
        guard error.hasSuffix("--help')") else { fatalError("\(arguments): the error '\(error)' has no help hint") }
        let quoted = arguments.contains { $0.contains(where: \.isNewline) }
        guard quoted || !error.contains(where: \.isNewline) else { fatalError("\(arguments): the error '\(error)' is more than one line") }
        return 0
    }
    guard checked.command != nil else { return 0 }
    for argument in arguments.dropFirst().prefix(while: { $0 != "--" }) {
        let scalars = argument.unicodeScalars
        guard argument.hasPrefix("--"), let equals = scalars.firstIndex(of: "=") else { continue }
        let name = String(scalars[..<equals])
        let value = String(scalars[scalars.index(after: equals)...])
        guard let values = checked.values[name], values.contains(value) else {
            fatalError("\(arguments): '\(argument)' accepted, but '\(name)' does not hold '\(value)' (it holds \(checked.values[name] ?? []))")
        }
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzCLIArguments) }
}
