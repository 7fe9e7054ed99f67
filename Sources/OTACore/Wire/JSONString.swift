/// The one way a string is written as a JSON string literal, as `JSONEncoder` writes it with
/// `.withoutEscapingSlashes`: `"` and `\` escaped, `\n` `\r` `\t` `\b` `\f` by their short forms,
/// other control characters as `\u00XX` (lower-case digits), everything else as it is.
///
/// ```swift
/// JSONString.quoted("a \"b\"\n")   // "\"a \\\"b\\\"\\n\""
/// ```
public enum JSONString {
    /// `value` as a JSON string literal, quotes included.
    public static func quoted(_ value: String) -> String {
        var text = ""
        append(value, to: &text)
        return text
    }

    /// Appends `value` to `text` as a JSON string literal, quotes included.
    public static func append(_ value: String, to text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case _ where scalar.value < 0x20: text += "\\u" + Hex.digits(scalar.value, digits: 4, uppercase: false)
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
