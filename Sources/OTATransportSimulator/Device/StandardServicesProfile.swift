import Foundation
import OTACore

/// What a simulated device exposes of the standard services: Device Information (manufacturer,
/// model, hardware and firmware revision) and a Battery Level that drains as data arrives. A
/// `nil` field is a characteristic the device does not have; a device with none of the strings
/// has no Device Information service, one with no battery no Battery service.
public struct StandardServicesProfile: Sendable, Hashable {
    /// Manufacturer Name String.
    public var manufacturer: String?
    /// Model Number String.
    public var modelNumber: String?
    /// Hardware Revision String.
    public var hardwareRevision: String?
    /// Firmware Revision String.
    public var firmwareRevision: String?
    /// The battery level when the simulation starts, 0–100 %; `nil`: no Battery service.
    public var batteryLevel: Int?
    /// Percentage points the battery loses per 100 kB of data received (radio and flash work).
    public var batteryDrainPer100kB: Double

    /// Creates a profile.
    public init(
        manufacturer: String? = nil, modelNumber: String? = nil, hardwareRevision: String? = nil, firmwareRevision: String? = nil,
        batteryLevel: Int? = nil, batteryDrainPer100kB: Double = 1
    ) {
        self.manufacturer = manufacturer
        self.modelNumber = modelNumber
        self.hardwareRevision = hardwareRevision
        self.firmwareRevision = firmwareRevision
        self.batteryLevel = batteryLevel
        self.batteryDrainPer100kB = batteryDrainPer100kB
    }

    /// A device without either service.
    public static let none = StandardServicesProfile()

    /// Whether the device has a Device Information service.
    public var hasDeviceInformation: Bool {
        manufacturer != nil || modelNumber != nil || hardwareRevision != nil || firmwareRevision != nil
    }

    /// The services as the device's GATT table shows them.
    public var services: [GATTServiceDefinition] {
        var services: [GATTServiceDefinition] = []
        if hasDeviceInformation {
            let present: [(CharacteristicID, String?)] = [
                (StandardServices.manufacturerName, manufacturer), (StandardServices.modelNumber, modelNumber),
                (StandardServices.hardwareRevision, hardwareRevision), (StandardServices.firmwareRevision, firmwareRevision),
            ]
            services.append(
                GATTServiceDefinition(
                    uuid: StandardServices.deviceInformation,
                    characteristics: present.compactMap { id, value in value.map { _ in .init(uuid: id.characteristic, properties: .read) } }
                )
            )
        }
        if batteryLevel != nil {
            services.append(
                GATTServiceDefinition(
                    uuid: StandardServices.battery,
                    characteristics: [.init(uuid: StandardServices.batteryLevel.characteristic, properties: [.read, .notify])]
                )
            )
        }
        return services
    }

    /// The value of a Device Information string, or `nil` when `id` is not one the device has.
    func deviceInformationValue(_ id: CharacteristicID) -> Data? {
        let value: String? =
            switch id {
            case StandardServices.manufacturerName: manufacturer
            case StandardServices.modelNumber: modelNumber
            case StandardServices.hardwareRevision: hardwareRevision
            case StandardServices.firmwareRevision: firmwareRevision
            default: nil
            }
        return value.map { Data($0.utf8) }
    }
}
