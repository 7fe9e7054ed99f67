/// Named settings for a protocol, as text: from `--param key=value` on the command line or from a
/// catalog manifest. Each protocol documents the names it reads.
public struct ProtocolParameters: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The raw values by name.
    public private(set) var values: [String: String]

    /// Creates parameters from a dictionary.
    public init(_ values: [String: String] = [:]) { self.values = values }

    public init(dictionaryLiteral elements: (String, String)...) {
        values = Dictionary(elements, uniquingKeysWith: { _, last in last })
    }

    /// Sets a value.
    public subscript(name: String) -> String? {
        get { values[name] }
        set { values[name] = newValue }
    }

    /// Fails when a name is not one of `known`, so a typo does not go unnoticed.
    public func validate(known: [String], protocolName: String) throws(OTAError) {
        for name in values.keys.sorted() where !known.contains(name) {
            let list = known.isEmpty ? "none" : known.sorted().joined(separator: ", ")
            throw OTAError(
                .invalidParameter,
                "protocol '\(protocolName)' has no parameter '\(name)' (known: \(list))"
            )
        }
    }

    /// The UUID named `name`, or `defaultValue` when absent.
    public func uuid(_ name: String, default defaultValue: GATTUUID) throws(OTAError) -> GATTUUID {
        guard let text = values[name] else { return defaultValue }
        guard let uuid = GATTUUID(text) else {
            throw OTAError(.invalidParameter, "parameter '\(name)': '\(text)' is not a Bluetooth UUID")
        }
        return uuid
    }

    /// The integer named `name` within `range`, or `defaultValue` when absent.
    public func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(OTAError) -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw OTAError(
                .invalidParameter,
                "parameter '\(name)': '\(text)' is not an integer in \(range.lowerBound)...\(range.upperBound)"
            )
        }
        return value
    }
}
