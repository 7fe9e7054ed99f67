import Foundation
import FuzzSupport
import OTACore

/// `ota campaign create --target-name PATTERN` and `--target-address PATTERN` (decision 0044):
/// `CampaignTargetSelection.pattern(_:option:)`, then `GlobPattern.matches(_:)` against names
/// (also what a catalog family's `name` match uses).
///
/// The input: the pattern, a NUL, then names separated by NULs.
///
/// Oracles: a pattern is refused exactly when it is empty or holds `[`, `]`, `{` or `}`; an
/// accepted one matches a name exactly when a plain recursive reading of `*` (any run) and `?`
/// (one character) does, and matches itself with `*` and `?` taken literally.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTargetPattern(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let parts = fuzzInput(start, count).split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    let text = parts[0]
    let refused = text.isEmpty || text.contains(where: { "[]{}".contains($0) })
    guard let pattern = attempt({ try CampaignTargetSelection.pattern(text, option: "--target-name") }) else {
        guard refused else { fatalError("'\(text)' was refused") }
        return 0
    }
    guard !refused else { fatalError("'\(text)' was accepted") }
    guard pattern.description == text else { fatalError("'\(text)' became '\(pattern)'") }
    let characters = Array(text)
    // Names: those of the input, and the pattern itself with its wildcards taken literally.
    for name in parts.dropFirst().prefix(8) + [text] {
        let name = Array(name)
        guard characters.count * name.count <= 1 << 16 else { continue }
        var memo: [Int: Bool] = [:]
        let expected = reference(characters, 0, name, 0, &memo)
        guard pattern.matches(String(name)) == expected else {
            fatalError("'\(text)' against '\(String(name))': matches says \(!expected), the reference \(expected)")
        }
    }
    guard pattern.matches(text) else { fatalError("'\(text)' does not match itself") }
    return 0
}

/// Whether `name[n...]` matches `pattern[p...]`: `*` any run (none included), `?` one character,
/// anything else itself. Memoised on (p, n), so it stays polynomial.
func reference(_ pattern: [Character], _ p: Int, _ name: [Character], _ n: Int, _ memo: inout [Int: Bool]) -> Bool {
    let key = p * (name.count + 1) + n
    if let known = memo[key] { return known }
    let result: Bool
    if p == pattern.count {
        result = n == name.count
    } else if pattern[p] == "*" {
        result = reference(pattern, p + 1, name, n, &memo) || (n < name.count && reference(pattern, p, name, n + 1, &memo))
    } else {
        result = n < name.count && (pattern[p] == "?" || pattern[p] == name[n]) && reference(pattern, p + 1, name, n + 1, &memo)
    }
    memo[key] = result
    return result
}

@main
enum Main {
    static func main() { runFuzzer(fuzzTargetPattern) }
}
