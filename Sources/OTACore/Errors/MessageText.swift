/// Text from outside (a file name, a field's value) as it appears in a message: on one line and
/// short, however long or strange the original.
public enum MessageText {
    /// The most characters of outside text a message shows.
    public static let maximumNameLength = 80

    /// `text` with control characters escaped and, when longer than ``maximumNameLength``, cut
    /// with its full length noted: "aaaa…aaa… (1000000 characters)".
    public static func name(_ text: String) -> String {
        var shown = ""
        var count = 0
        for character in text {
            count += 1
            guard count <= maximumNameLength else { continue }
            if character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}" }) {
                shown += character.unicodeScalars.map { $0.escaped(asASCII: true) }.joined()
            } else {
                shown.append(character)
            }
        }
        return count > maximumNameLength ? "\(shown)… (\(count) characters)" : shown
    }
}
