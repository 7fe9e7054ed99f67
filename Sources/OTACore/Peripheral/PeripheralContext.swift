import Foundation

/// What a host gives a ``DeviceModel``: notifications, flash, and control over the link.
public protocol PeripheralContext: AnyObject, Sendable {
    /// The device's flash, which keeps its contents across disconnects and reboots.
    var flash: any FlashStorage { get }

    /// Whether the connected central has enabled notifications on `characteristic`.
    func isSubscribed(to characteristic: CharacteristicID) -> Bool

    /// Sends a notification. It leaves once the device has finished the work it has started
    /// (flash writes), like firmware that notifies at the end of its handler. Ignored when the
    /// central has not subscribed.
    func notify(_ value: Data, on characteristic: CharacteristicID)

    /// Restarts the device after `delay`: the link drops, RAM state is lost, flash is kept.
    func reboot(after delay: Duration)
}
