import Foundation

/// The device side of a protocol: the peripheral half that a simulator, or a test peripheral
/// served through a real Bluetooth stack, hosts.
///
/// Every protocol ships one, so every protocol can be demonstrated, tested and benchmarked
/// without hardware. A model keeps its RAM state itself; what must survive a reboot goes to
/// ``PeripheralContext/flash``.
///
/// - Note: The host calls a model from one task or thread at a time, but not always the same
///   one; models protect their state with a lock.
public protocol DeviceModel: AnyObject, Sendable {
    /// The GATT services the model exposes.
    var services: [GATTServiceDefinition] { get }

    /// A central connected.
    func connected(_ peripheral: any PeripheralContext)

    /// The link went down. RAM state may be kept (as real firmware keeps its globals) unless the
    /// device reboots.
    func disconnected()

    /// The device restarted: RAM state is lost, flash is kept.
    func rebooted()

    /// A central wrote to a characteristic. For a write with response, the returned status is
    /// sent back as the ATT response.
    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus

    /// A central read a characteristic.
    func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus>
}

extension DeviceModel {
    public func connected(_ peripheral: any PeripheralContext) {}
    public func disconnected() {}
    public func rebooted() {}
    public func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        .failure(.readNotPermitted)
    }
}

/// A device model with state of its own that a real device keeps in non-volatile memory outside
/// the update slot (MCUboot's primary slot and trailer flags), so that a host that keeps a
/// simulated device between runs (`--sim-state`) keeps that state too, beside the flash.
public protocol PersistentDeviceModel: DeviceModel {
    /// The non-volatile state, in a form of the model's own.
    var persistentState: Data { get }
    /// Restores state saved from ``persistentState``.
    ///
    /// - Throws: an error naming what is wrong when `data` is not such a state.
    func restore(persistentState data: Data) throws
}
