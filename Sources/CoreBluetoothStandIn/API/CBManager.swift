import Foundation

/// What the Bluetooth radio of this device can do for the app, as `CBManagerState`.
public enum CBManagerState: Int, Sendable {
    case unknown = 0
    case resetting = 1
    case unsupported = 2
    case unauthorized = 3
    case poweredOff = 4
    case poweredOn = 5
}

/// Whether the user allowed the app to use Bluetooth, as `CBManagerAuthorization`.
public enum CBManagerAuthorization: Int, Sendable {
    case notDetermined = 0
    case restricted = 1
    case denied = 2
    case allowedAlways = 3
}

/// The base class of CoreBluetooth's managers.
open class CBManager: NSObject {

    /// The manager's state; `.unknown` until the first `centralManagerDidUpdateState`.
    open var state: CBManagerState { .unknown }

    /// The app's Bluetooth authorization (in the stand-in: the current world's).
    open class var authorization: CBManagerAuthorization { StandInWorld.current.authorization }
}
