/// A shell-style name pattern: `*` matches any run of characters, `?` one character, anything
/// else itself (case-sensitive).
public struct GlobPattern: Sendable, Hashable, CustomStringConvertible {
    /// The pattern text.
    public let description: String
    private let characters: [Character]

    /// Creates a pattern.
    public init(_ pattern: String) {
        description = pattern
        characters = Array(pattern)
    }

    /// Whether `text` matches the whole pattern.
    public func matches(_ text: String) -> Bool {
        let text = Array(text)
        var p = 0
        var t = 0
        var star: Int?
        var resume = 0
        while t < text.count {
            // A `*` is a wildcard before it is a character: taken as the literal `*` a name
            // holds, it could not match the rest ('lock*' against 'lock*x'; fuzzing found it).
            if p < characters.count, characters[p] == "*" {
                star = p
                resume = t
                p += 1
            } else if p < characters.count, characters[p] == "?" || characters[p] == text[t] {
                p += 1
                t += 1
            } else if let star {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < characters.count, characters[p] == "*" { p += 1 }
        return p == characters.count
    }
}
