/// A firmware version as devices and packages write it — `1.4.0`, `v2.0.1`, `1.2.3+4`,
/// `1.2.3.4`, `2.0.1-beta` — reduced to its leading dotted numbers for comparing. Versions
/// compare number by number, a missing number counting as 0 (`1.2` = `1.2.0`); whatever follows
/// the numbers (`-beta`, `+4`, ` (build 7)`) is kept for messages but not compared.
public struct FirmwareVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numbers compared, at most four.
    public let numbers: [Int]
    /// The version as written.
    public let text: String

    /// Reads a version; `nil` when `text` does not start with a number (after an optional `v`).
    public init?(_ text: String) {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        if rest.first == "v" || rest.first == "V" { rest = rest.dropFirst() }
        var numbers: [Int] = []
        while numbers.count < 4 {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 9, let number = Int(digits) else { break }
            numbers.append(number)
            rest = rest.dropFirst(digits.count)
            guard rest.first == ".", rest.dropFirst().first.map({ $0.isASCII && $0.isNumber }) == true else { break }
            rest = rest.dropFirst()
        }
        guard !numbers.isEmpty else { return nil }
        self.numbers = numbers
        self.text = MessageText.name(text)
    }

    public var description: String { text }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        for index in 0..<max(lhs.numbers.count, rhs.numbers.count) {
            let (left, right) = (index < lhs.numbers.count ? lhs.numbers[index] : 0, index < rhs.numbers.count ? rhs.numbers[index] : 0)
            if left != right { return left < right }
        }
        return false
    }

    /// Whether both name the same numbers (`1.2` and `1.2.0`).
    public func isSameVersion(as other: Self) -> Bool { !(self < other) && !(other < self) }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.numbers == rhs.numbers && lhs.text == rhs.text }
}

/// The version an update installs, and whether installing it over a newer one is allowed.
public struct VersionRequirement: Sendable, Hashable {
    /// The version the firmware declares.
    public var version: FirmwareVersion
    /// Where it is declared, for messages ("the package manifest", "the MCUboot image header").
    public var source: String
    /// Whether an older version than the device runs may be installed (`--allow-downgrade`).
    public var allowsDowngrade: Bool

    /// A requirement.
    public init(version: FirmwareVersion, source: String, allowsDowngrade: Bool = false) {
        self.version = version
        self.source = source
        self.allowsDowngrade = allowsDowngrade
    }
}

/// A protocol client or container format that knows the version an image declares (MCUboot's
/// image header), for the downgrade check.
public protocol FirmwareVersionDeclaring: Sendable {
    /// The version `image` declares, as written; `nil` when it declares none.
    func declaredVersion(of image: FirmwareImage) -> String?
}
