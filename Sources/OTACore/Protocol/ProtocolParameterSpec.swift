/// One parameter a protocol reads, declared once: its name, a line about it, what values it
/// takes and its default. The declaration parses and checks `--param` and catalog values, names
/// the known parameters for the typo check, and is what `ota protocols` and the protocol docs
/// list — the way swift-argument-parser's `@Option` serves parsing and help alike.
///
/// Declare a parameter as a typed ``ProtocolParameter`` (``ProtocolParameter/integer(_:summary:default:in:)``,
/// ``ProtocolParameter/duration(_:summary:default:milliseconds:)``, ``ProtocolParameter/uuid(_:summary:default:)``,
/// ``ProtocolParameter/text(_:summary:default:)``); its ``ProtocolParameter/spec`` is this value.
public struct ProtocolParameterSpec: Sendable, Hashable {
    /// What values a parameter takes.
    public enum Kind: Sendable, Hashable {
        /// A decimal integer within the range.
        case integer(ClosedRange<Int>)
        /// A whole number of milliseconds within the range.
        case duration(milliseconds: ClosedRange<Int>)
        /// A Bluetooth UUID (16-, 32- or 128-bit).
        case uuid
        /// Any text.
        case text
    }

    /// The name in `--param NAME=VALUE` and in a catalog's `parameters`: lowercase, words
    /// separated by `-`.
    public let name: String
    /// What the parameter sets, in a few words, without its range or default.
    public let summary: String
    /// The values it takes.
    public let kind: Kind
    /// The default, written as a user would write it (`16`, `2000`, a UUID).
    public let defaultText: String

    /// Creates a declaration; prefer the typed ``ProtocolParameter`` factories.
    public init(name: String, summary: String, kind: Kind, defaultText: String) {
        self.name = name
        self.summary = summary
        self.kind = kind
        self.defaultText = defaultText
    }

    /// The values it takes, in words: `1...1024`, `50...60000 ms`, `a Bluetooth UUID`, `text`.
    public var valueDescription: String {
        switch kind {
        case .integer(let range): "\(range.lowerBound)...\(range.upperBound)"
        case .duration(let range): "\(range.lowerBound)...\(range.upperBound) ms"
        case .uuid: "a Bluetooth UUID"
        case .text: "text"
        }
    }

    /// The line `ota protocols` prints after the name: the summary, the range for numbers, and
    /// the default ("chunks per acknowledgement, 1...1024 (default 16)").
    public var helpText: String {
        switch kind {
        case .integer, .duration: "\(summary), \(valueDescription) (default \(defaultText))"
        case .uuid, .text: "\(summary) (default \(defaultText))"
        }
    }

    /// Checks `text` against the kind.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter``: "parameter 'batch': '0' is out of range,
    ///   expected 1...1024", "parameter 'batch': 'x' is not an integer, expected 1...1024".
    public func check(_ text: String) throws(OTAError) {
        switch kind {
        case .integer(let range), .duration(milliseconds: let range):
            if let problem = Self.integerProblem(text, in: range) {
                throw OTAError(.invalidParameter, "parameter '\(name)': \(problem)")
            }
        case .uuid:
            guard GATTUUID(text) != nil else {
                throw OTAError(.invalidParameter, "parameter '\(name)': '\(text)' is not a Bluetooth UUID")
            }
        case .text:
            break
        }
    }
}

/// A typed parameter declaration: the ``spec`` that describes it and the value it reads.
///
/// ```swift
/// static let batch = ProtocolParameter.integer("batch", summary: "chunks per ACK", default: 16, in: 1...1024)
/// public var batch = Self.batch.defaultValue
/// // in init(parameters:): batch = try reader.value(Self.batch)
/// ```
public struct ProtocolParameter<Value: Sendable>: Sendable {
    /// The declaration: name, summary, kind, default.
    public let spec: ProtocolParameterSpec
    /// The value when the parameter is not given.
    public let defaultValue: Value
    /// Converts text that passed `spec.check`.
    private let convert: @Sendable (String) -> Value?

    private init(spec: ProtocolParameterSpec, defaultValue: Value, convert: @escaping @Sendable (String) -> Value?) {
        self.spec = spec
        self.defaultValue = defaultValue
        self.convert = convert
    }

    /// The value `text` stands for.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` when it is not of the declared kind.
    public func parse(_ text: String) throws(OTAError) -> Value {
        try spec.check(text)
        guard let value = convert(text) else {
            throw OTAError(.invalidParameter, "parameter '\(spec.name)': '\(text)' is not \(spec.valueDescription)")
        }
        return value
    }
}

extension ProtocolParameter where Value: FixedWidthInteger {
    /// An integer within `range`.
    ///
    /// - Precondition: the range fits in `Int` and holds the default.
    public static func integer(_ name: String, summary: String, default defaultValue: Value, in range: ClosedRange<Value>) -> Self {
        precondition(range.contains(defaultValue), "parameter '\(name)': default \(defaultValue) outside \(range)")
        let bounds = Int(range.lowerBound)...Int(range.upperBound)
        return Self(
            spec: ProtocolParameterSpec(name: name, summary: summary, kind: .integer(bounds), defaultText: String(defaultValue)),
            defaultValue: defaultValue,
            convert: { Value(exactly: Int($0) ?? Int.min) }
        )
    }
}

extension ProtocolParameter where Value == Duration {
    /// A duration given in whole milliseconds within `milliseconds`.
    ///
    /// - Precondition: the default is a whole number of milliseconds within the range.
    public static func duration(_ name: String, summary: String, default defaultValue: Duration, milliseconds range: ClosedRange<Int>) -> Self {
        let (seconds, attoseconds) = defaultValue.components
        let defaultMilliseconds = Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
        precondition(Duration.milliseconds(defaultMilliseconds) == defaultValue && range.contains(defaultMilliseconds), "parameter '\(name)': bad default")
        return Self(
            spec: ProtocolParameterSpec(name: name, summary: summary, kind: .duration(milliseconds: range), defaultText: String(defaultMilliseconds)),
            defaultValue: defaultValue,
            convert: { Int($0).map { .milliseconds($0) } }
        )
    }
}

extension ProtocolParameter where Value == GATTUUID {
    /// A Bluetooth UUID.
    public static func uuid(_ name: String, summary: String, default defaultValue: GATTUUID) -> Self {
        Self(
            spec: ProtocolParameterSpec(name: name, summary: summary, kind: .uuid, defaultText: defaultValue.description),
            defaultValue: defaultValue,
            convert: { GATTUUID($0) }
        )
    }
}

extension ProtocolParameter where Value == String {
    /// Free text.
    public static func text(_ name: String, summary: String, default defaultValue: String) -> Self {
        Self(
            spec: ProtocolParameterSpec(name: name, summary: summary, kind: .text, defaultText: defaultValue),
            defaultValue: defaultValue,
            convert: { $0 }
        )
    }
}

extension ProtocolParameterSpec {
    /// Why `text` is not an integer in `range`, or `nil` when it is one: "'x' is not an integer,
    /// expected 1...1024" or "'0' is out of range, expected 1...1024". The one wording for every
    /// integer the tools parse, protocol parameters and command-line options alike.
    public static func integerProblem(_ text: String, in range: ClosedRange<Int>) -> String? {
        let expected = "expected \(range.lowerBound)...\(range.upperBound)"
        guard let value = Int(text) else { return "'\(text)' is not an integer, \(expected)" }
        return range.contains(value) ? nil : "'\(text)' is out of range, \(expected)"
    }
}
