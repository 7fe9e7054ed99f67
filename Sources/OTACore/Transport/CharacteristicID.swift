/// Names one characteristic on a device: the service it belongs to and its own UUID.
public struct CharacteristicID: Hashable, Sendable, CustomStringConvertible {
    /// The UUID of the service that holds the characteristic.
    public var service: GATTUUID
    /// The UUID of the characteristic.
    public var characteristic: GATTUUID

    /// Creates an identifier.
    public init(service: GATTUUID, characteristic: GATTUUID) {
        self.service = service
        self.characteristic = characteristic
    }

    public var description: String { "\(characteristic) (service \(service))" }
}
