/// The protocols an app links, by name. The app fills it; `--protocol NAME` resolves through it.
///
/// There is no central list of protocols in the core: each protocol target contributes a
/// ``ProtocolDescriptor`` and the app registers the ones it wants.
public struct ProtocolRegistry: Sendable {
    private var descriptors: [String: ProtocolDescriptor] = [:]
    private var order: [String] = []

    /// Creates a registry holding `descriptors`.
    ///
    /// - Precondition: names are unique; registering two protocols under one name is a
    ///   programming error in the app.
    public init(_ descriptors: [ProtocolDescriptor] = []) {
        for descriptor in descriptors { register(descriptor) }
    }

    /// Adds a protocol.
    public mutating func register(_ descriptor: ProtocolDescriptor) {
        precondition(descriptors[descriptor.name] == nil, "protocol '\(descriptor.name)' registered twice")
        descriptors[descriptor.name] = descriptor
        order.append(descriptor.name)
    }

    /// All registered protocols, sorted by name.
    public var all: [ProtocolDescriptor] {
        descriptors.values.sorted { $0.name < $1.name }
    }

    /// All registered protocols, in the order they were registered: the order of the families
    /// and demo devices derived from them.
    public var inRegistrationOrder: [ProtocolDescriptor] {
        order.compactMap { descriptors[$0] }
    }

    /// The protocol named `name`.
    ///
    /// - Throws: ``OTAError/Code/unknownProtocol`` listing the names that are registered.
    public func descriptor(named name: String) throws(OTAError) -> ProtocolDescriptor {
        guard let descriptor = descriptors[name] else {
            let known = all.map(\.name).joined(separator: ", ")
            throw OTAError(.unknownProtocol, "unknown protocol '\(MessageText.name(name))' (available: \(known.isEmpty ? "none" : known))")
        }
        return descriptor
    }
}
