import Foundation

/// The hardware an image or a package declares it is built for, checked against the device's
/// Device Information hardware revision before the first write.
public struct HardwareCompatibility: Sendable, Hashable {
    /// How a declaration is compared with the device's hardware revision.
    public enum Rule: Sendable, Hashable {
        /// The revision must be one of these, ignoring case and surrounding whitespace (a package
        /// manifest's `hardware` list).
        case revisions([String])
        /// The revision, read as a decimal integer (or hexadecimal after `0x`), must equal this
        /// number (Nordic's `hw_version`). A revision that is not an integer cannot be compared.
        case integer(UInt32)
    }

    /// What happens when the device's hardware revision is unknown or cannot be compared.
    public enum WhenUnknown: Sendable, Hashable {
        /// Refuse the update (unless forced): nothing else checks the hardware.
        case refuse
        /// Say so and go on: something else checks it (the catalog family, the bootloader).
        case note(String)
    }

    /// The rule.
    public var rule: Rule
    /// Who declares it, for messages ("pkg/manifest.json hardware", "app.bin's init packet").
    public var source: String
    /// What an unknown revision means for this declaration.
    public var whenUnknown: WhenUnknown

    /// Creates a declaration.
    public init(_ rule: Rule, source: String, whenUnknown: WhenUnknown) {
        self.rule = rule
        self.source = source
        self.whenUnknown = whenUnknown
    }

    /// The declaration in words: "rev-B, rev-C in pkg/manifest.json hardware", "hw_version 52 in
    /// app.bin's init packet".
    public var declared: String {
        switch rule {
        case .revisions(let revisions): "\(revisions.joined(separator: ", ")) in \(source)"
        case .integer(let value): "hw_version \(value) in \(source)"
        }
    }

    /// The outcome of comparing a declaration with a device.
    public enum Verdict: Sendable, Hashable {
        /// The device's revision is one the declaration names.
        case matches
        /// It is not.
        case mismatch
        /// The revision cannot be compared with this declaration (it is not an integer).
        case notComparable
    }

    /// Compares the declaration with the device's hardware revision.
    public func verdict(for revision: String) -> Verdict {
        let normalized = Self.normalize(revision)
        switch rule {
        case .revisions(let revisions):
            return revisions.contains { Self.normalize($0) == normalized } ? .matches : .mismatch
        case .integer(let value):
            guard let number = Self.integer(normalized) else { return .notComparable }
            return number == value ? .matches : .mismatch
        }
    }

    static func normalize(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: "\0"))).lowercased()
    }

    static func integer(_ text: String) -> UInt32? {
        if text.hasPrefix("0x") { return UInt32(text.dropFirst(2), radix: 16) }
        return UInt32(text)
    }
}

/// A firmware container whose images declare the hardware they are built for (Nordic's init
/// packet `hw_version`; MCUboot's image TLVs would be another). The tool asks the protocol's
/// ``FirmwareContainerFormat`` for it and the preflight compares it with the device's Device
/// Information hardware revision before the first write.
public protocol HardwareCompatibilityDeclaring: Sendable {
    /// What `image` (loaded by this format) declares, or `nil` when it declares nothing.
    func hardwareCompatibility(of image: FirmwareImage) -> HardwareCompatibility?
}
