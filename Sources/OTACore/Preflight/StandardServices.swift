/// The Bluetooth SIG services a preflight reads: Battery (0x180F) and Device Information
/// (0x180A). They are standard, not vendor knowledge, so the engine reads them itself.
public enum StandardServices {
    /// Battery Service, 0x180F.
    public static let battery = GATTUUID("180F")!
    /// Device Information Service, 0x180A.
    public static let deviceInformation = GATTUUID("180A")!

    /// Battery Level, 0x2A19: one byte, 0–100 %.
    public static let batteryLevel = CharacteristicID(service: battery, characteristic: GATTUUID("2A19")!)
    /// Model Number String, 0x2A24.
    public static let modelNumber = CharacteristicID(service: deviceInformation, characteristic: GATTUUID("2A24")!)
    /// Hardware Revision String, 0x2A27.
    public static let hardwareRevision = CharacteristicID(service: deviceInformation, characteristic: GATTUUID("2A27")!)
    /// Firmware Revision String, 0x2A26.
    public static let firmwareRevision = CharacteristicID(service: deviceInformation, characteristic: GATTUUID("2A26")!)
    /// Manufacturer Name String, 0x2A29.
    public static let manufacturerName = CharacteristicID(service: deviceInformation, characteristic: GATTUUID("2A29")!)

    /// The Device Information strings a preflight reads, with the name used in messages.
    public static let deviceInformationStrings: [(id: CharacteristicID, name: String)] = [
        (manufacturerName, "manufacturer name"),
        (modelNumber, "model number"),
        (hardwareRevision, "hardware revision"),
        (firmwareRevision, "firmware revision"),
    ]
}

/// What a preflight learned from a device's standard services, and what it could not read.
public struct DeviceInformation: Sendable, Hashable {
    /// Manufacturer Name String.
    public var manufacturer: String?
    /// Model Number String.
    public var modelNumber: String?
    /// Hardware Revision String.
    public var hardwareRevision: String?
    /// Firmware Revision String.
    public var firmwareRevision: String?
    /// Battery Level, 0–100 %.
    public var batteryLevel: Int?
    /// What could not be read, one phrase each ("no Battery service", "hardware revision: timed
    /// out after 10 s").
    public var unread: [String]

    /// Creates a description.
    public init(
        manufacturer: String? = nil, modelNumber: String? = nil, hardwareRevision: String? = nil, firmwareRevision: String? = nil,
        batteryLevel: Int? = nil, unread: [String] = []
    ) {
        self.manufacturer = manufacturer
        self.modelNumber = modelNumber
        self.hardwareRevision = hardwareRevision
        self.firmwareRevision = firmwareRevision
        self.batteryLevel = batteryLevel
        self.unread = unread
    }

    /// One line for progress: "model X by Acme, hardware rev Y, firmware Z, battery 84%", then
    /// "; not read: …" when something was not.
    public var summary: String {
        var parts: [String] = []
        switch (modelNumber, manufacturer) {
        case (let model?, let maker?): parts.append("model \(model) by \(maker)")
        case (let model?, nil): parts.append("model \(model)")
        case (nil, let maker?): parts.append("manufacturer \(maker)")
        case (nil, nil): break
        }
        if let hardwareRevision { parts.append("hardware rev \(hardwareRevision)") }
        if let firmwareRevision { parts.append("firmware \(firmwareRevision)") }
        if let batteryLevel { parts.append("battery \(batteryLevel)%") }
        let read = parts.isEmpty ? "nothing read" : parts.joined(separator: ", ")
        guard !unread.isEmpty else { return read }
        return parts.isEmpty ? "\(read) (\(unread.joined(separator: ", ")))" : "\(read); not read: \(unread.joined(separator: ", "))"
    }
}
