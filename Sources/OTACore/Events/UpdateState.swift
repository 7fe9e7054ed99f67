/// The coarse phase of an update, suitable for a user interface.
public enum UpdateState: String, Sendable, Hashable, CustomStringConvertible {
    /// Opening the link to the device.
    case connecting
    /// Link is up; discovering services, reading the MTU, preparing the protocol.
    case negotiating
    /// Firmware bytes are flowing.
    case transferring
    /// The device is checking what it received.
    case verifying
    /// The device is making the new image bootable.
    case committing
    /// The device accepted the image.
    case completed
    /// The transfer is interrupted and can continue (link lost, or paused by the user).
    case paused
    /// The update ended with an error.
    case failed

    public var description: String { rawValue }
}
