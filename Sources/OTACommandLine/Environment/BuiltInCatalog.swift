import OTACore

/// The device catalog built into `ota`: the default family of every registered protocol (each
/// recognised by its own GATT profile's service), derived from the descriptors, so no protocol
/// name or UUID is written here. Schema of the catalogs added to it: docs/manifest.md.
enum BuiltInCatalog {
    /// Where the derived families say they come from, in messages.
    static let source = "built-in catalog"

    /// The families of `registry`'s protocols, in registration order.
    static func catalog(for registry: ProtocolRegistry) throws(OTAError) -> DeviceCatalog {
        try DeviceCatalog(defaultsOf: registry, source: source)
    }
}
