/// Named settings for a protocol, as text: from `--param key=value` on the command line or from a
/// catalog manifest. Each protocol declares the names it reads as ``ProtocolParameterSpec``s and
/// reads them through a ``ProtocolParameterReader``.
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

    /// Checks every value against `declared` — names first, so a typo does not go unnoticed,
    /// then each value against its kind — and returns a reader of the declared parameters.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter``: "protocol 'framed' has no parameter 'bach'
    ///   (known: …)" or "parameter 'batch': '0' is out of range, expected 1...1024".
    public func reader(declared: [ProtocolParameterSpec], protocolName: String) throws(OTAError) -> ProtocolParameterReader {
        let known = declared.map(\.name)
        for name in values.keys.sorted() where !known.contains(name) {
            let list = known.isEmpty ? "none" : known.sorted().joined(separator: ", ")
            throw OTAError(.invalidParameter, "protocol '\(protocolName)' has no parameter '\(name)' (known: \(list))")
        }
        for spec in declared {
            if let text = values[spec.name] { try spec.check(text) }
        }
        return ProtocolParameterReader(parameters: self, declared: declared)
    }
}

/// Parameters already checked against a protocol's declarations, read as typed values.
public struct ProtocolParameterReader: Sendable {
    /// The parameters as given.
    public let parameters: ProtocolParameters
    /// The declarations they were checked against.
    public let declared: [ProtocolParameterSpec]

    /// The value of `parameter`, or its default when it was not given.
    ///
    /// - Precondition: `parameter` is one of the declarations the reader was made with, so a
    ///   parameter read but not declared (missing from `ota protocols` and the typo check) fails
    ///   the first test that reads it.
    public func value<Value>(_ parameter: ProtocolParameter<Value>) throws(OTAError) -> Value {
        precondition(declared.contains(parameter.spec), "parameter '\(parameter.spec.name)' is read but not declared")
        guard let text = parameters[parameter.spec.name] else { return parameter.defaultValue }
        return try parameter.parse(text)
    }
}
