/// A protocol's settings as its parameters give them: which parameters it declares, and how it
/// reads them. ``init(parameters:)`` (checking the names and ranges against the declarations)
/// comes from here, so each configuration only says what it reads.
///
/// ```swift
/// struct LumenConfiguration: ProtocolConfiguration {
///     static let windowParameter = ProtocolParameter.integer("window", summary: "chunks in flight", default: 4, in: 1...32)
///     static let parameters = [windowParameter.spec]
///     static let protocolName = "lumen"
///     var window = Self.windowParameter.defaultValue
///     init(reading reader: ProtocolParameterReader) throws(OTAError) { window = try reader.value(Self.windowParameter) }
/// }
/// ```
public protocol ProtocolConfiguration: Sendable {
    /// Every parameter the configuration reads, in the order `ota protocols` lists them.
    static var parameters: [ProtocolParameterSpec] { get }
    /// The protocol's name, for the message about a parameter it does not declare.
    static var protocolName: String { get }
    /// Reads the configuration from `reader`, which was made with ``parameters`` among its
    /// declarations.
    init(reading reader: ProtocolParameterReader) throws(OTAError)
}

extension ProtocolConfiguration {
    /// Reads `parameters` against ``parameters``.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for an unknown name or a value out of range.
    public init(parameters: ProtocolParameters) throws(OTAError) {
        try self.init(reading: try parameters.reader(declared: Self.parameters, protocolName: Self.protocolName))
    }
}
