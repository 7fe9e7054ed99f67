import OTACore

/// Which of Espressif's three implementations of the protocol a device runs. They agree on the
/// framing and differ in what they declare and check (docs/protocols/esp-ble-ota.md).
public enum EspressifVariant: String, Sendable, Hashable, CaseIterable {
    /// `ble_ota` on Bluedroid: firmware characteristic Write + Indicate; no command or sector CRC
    /// check; packets out of sequence are logged and ignored.
    case bluedroid
    /// `ble_ota` on NimBLE: as Bluedroid on the wire; a packet out of sequence marks the sector
    /// bad and the 0xFF packet is answered with a sector index error.
    case nimble
    /// `ble_ota_raw`: also declares Write Without Response and Notify; checks command length and
    /// CRC, the sector CRC (→ CRC error) and packet sequence (→ payload length error at once).
    case raw

    /// Whether the firmware characteristic takes Write Without Response (only `ble_ota_raw`
    /// declares it; for `ble_ota` it is unconfirmed, so the client does not use it).
    public var acceptsWriteWithoutResponse: Bool { self == .raw }
}

/// What the client checks in an image before connecting.
public enum EspressifImageCheck: String, Sendable, Hashable, CaseIterable {
    /// An ESP-IDF app image: magic 0xE9, segments that fit, and the appended SHA-256 when the
    /// header says one is there.
    case espApp = "esp-app"
    /// Nothing (pre-encrypted images, `CONFIG_PRE_ENC_OTA`, do not start with the app header).
    case none
}

/// The client's settings: the GATT layout, the device's variant and the image check, each a
/// declared parameter.
public struct EspressifConfiguration: ProtocolConfiguration, Hashable {
    /// The GATT layout.
    public var profile: EspressifGATTProfile
    /// The device's implementation.
    public var variant: EspressifVariant
    /// What is checked before connecting.
    public var imageCheck: EspressifImageCheck
    /// How many times one sector is sent again (after an error acknowledgement or a silence)
    /// before the update fails.
    public var sectorRetries: Int

    /// Creates a configuration.
    public init(
        profile: EspressifGATTProfile = EspressifGATTProfile(),
        variant: EspressifVariant = .bluedroid,
        imageCheck: EspressifImageCheck = .espApp,
        sectorRetries: Int = 3
    ) {
        self.profile = profile
        self.variant = variant
        self.imageCheck = imageCheck
        self.sectorRetries = sectorRetries
    }

    /// `variant`: the device's implementation.
    public static let variantParameter = ProtocolParameter.text(
        "variant", summary: "device implementation: bluedroid, nimble (ble_ota) or raw (ble_ota_raw, takes write without response)",
        default: EspressifVariant.bluedroid.rawValue)
    /// `image`: the check before connecting.
    public static let imageParameter = ProtocolParameter.text(
        "image", summary: "check before connecting: esp-app (magic 0xE9, appended SHA-256) or none", default: EspressifImageCheck.espApp.rawValue)
    /// `sector-retries`: resends of one sector before giving up.
    public static let sectorRetriesParameter = ProtocolParameter.integer(
        "sector-retries", summary: "times one sector is sent again after an error ACK or a silence", default: 3, in: 0...20)

    /// Every parameter the protocol reads, in the order `ota protocols` lists them.
    public static let parameters =
        EspressifGATTProfile.parameters + [variantParameter.spec, imageParameter.spec, sectorRetriesParameter.spec]

    /// `esp-ble-ota`, for the message about an undeclared parameter.
    public static var protocolName: String { EspressifProtocol.name }

    /// Reads the configuration from `reader`, which must have been made with ``parameters``
    /// among its declarations.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a bad value.
    public init(reading reader: ProtocolParameterReader) throws(OTAError) {
        let variantText = try reader.value(Self.variantParameter)
        guard let variant = EspressifVariant(rawValue: variantText) else {
            throw OTAError(.invalidParameter, "parameter 'variant': '\(variantText)' is not one of bluedroid, nimble, raw")
        }
        let imageText = try reader.value(Self.imageParameter)
        guard let imageCheck = EspressifImageCheck(rawValue: imageText) else {
            throw OTAError(.invalidParameter, "parameter 'image': '\(imageText)' is not one of esp-app, none")
        }
        self.init(
            profile: try EspressifGATTProfile(reader: reader),
            variant: variant,
            imageCheck: imageCheck,
            sectorRetries: try reader.value(Self.sectorRetriesParameter)
        )
    }
}
