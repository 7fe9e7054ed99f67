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

    /// Whether the device's stack answers a write with response as soon as it arrives, before
    /// the work the write starts (flash erases and writes) is done: a Nordic SoftDevice that
    /// authorizes Control Point writes and queues the request for the application does. The
    /// notifications the write produces still leave after that work. Default `false`: the
    /// response leaves once the device's queued work is done, as from firmware that answers at
    /// the end of its write handler.
    var acknowledgesWritesOnArrival: Bool { get }

    /// Where and as what the device advertises now, given the hardware's address, when the
    /// firmware decides (a bootloader at the next address, under the name it was told); `nil`
    /// (the default) advertises the hardware's own address and name.
    func advertising(hardwareAddress: String) -> AdvertisedIdentity?
    /// The firmware version the device would report through its protocol
    /// (``RunningVersionReporting``), for a tool to show without connecting (`--dry-run`);
    /// `nil` (the default) when the protocol reports none.
    var runningVersion: ReportedVersion? { get }
}

extension DeviceModel {
    public func connected(_ peripheral: any PeripheralContext) {}
    public func disconnected() {}
    public func rebooted() {}
    public var acknowledgesWritesOnArrival: Bool { false }
    public func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        .failure(.readNotPermitted)
    }
    public func advertising(hardwareAddress: String) -> AdvertisedIdentity? { nil }
    public var runningVersion: ReportedVersion? { nil }
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

/// A device model with state in RAM that outlives the central: a real device keeps running when
/// the host updating it dies, and a new host resumes from what it holds (Zephyr's upload offset),
/// until the device reboots (``DeviceModel/rebooted()`` forgets it). A host that keeps a simulated
/// device across its own processes (`--sim-state`) keeps this state too, so that killing the host
/// is not a reboot of the device.
public protocol RunningDeviceModel: DeviceModel {
    /// The RAM state a new central can resume from, in a form of the model's own; empty when
    /// there is none.
    var runningState: Data { get }
    /// Restores state saved from ``runningState``; empty data restores none.
    ///
    /// - Throws: an error naming what is wrong when `data` is not such a state.
    func restore(runningState data: Data) throws
}
