import Foundation
import OTACore
import OTATransportSimulator

/// A peripheral within range of a ``StandInWorld``: a ``SimulatedDevice`` as heard at one
/// address, and what it advertises there. Tests control and inspect it here; apps see it as a
/// `CBPeripheral`.
///
/// iOS names a peripheral by an identifier of its own for each address it hears, so a device
/// whose firmware moves it to another address (an nRF5 application jumping into a bootloader at
/// its address + 1) is a second peripheral with a new identifier; the world makes it the first
/// time the device advertises there (``StandInWorld/peripherals(of:)``). At its own address the
/// device stays the same peripheral, whatever it advertises.
public final class StandInPeripheral: Sendable {
    /// What `CBPeripheral.identifier` reads.
    public let identifier: UUID
    /// The simulated device behind it.
    public let device: SimulatedDevice
    /// The address it stands for (the device's own, or where its firmware moved it); iOS never
    /// shows it to the app.
    public let address: String
    /// The name it was put in range with, advertised while the device's firmware chooses none.
    public let configuredName: String
    /// The services it was put in range with (`nil`: what the device's model offers now).
    let configuredServices: [GATTUUID]?
    /// The RSSI a scan reports.
    public let rssi: Int
    /// Manufacturer data, as advertised (company identifier first, little-endian).
    public let manufacturerData: Data?
    unowned let world: StandInWorld
    private let mutable = Unchecked(Mutable())

    private final class Mutable {
        var link: StandInLink?
        var connectFaults: [StandInWorld.ConnectFault] = []
        var writesDropped = 0
        var links = 0
    }

    init(
        world: StandInWorld, identifier: UUID, device: SimulatedDevice, address: String, name: String, advertisedServices: [GATTUUID]?,
        rssi: Int, manufacturerData: Data?
    ) {
        self.world = world
        self.identifier = identifier
        self.device = device
        self.address = address.uppercased()
        self.configuredName = name
        self.configuredServices = advertisedServices
        self.rssi = rssi
        self.manufacturerData = manufacturerData
    }

    /// The advertised local name now (`CBAdvertisementDataLocalNameKey`): the one the device's
    /// firmware chose (a bootloader advertising the name its application was told), else
    /// ``configuredName``.
    public var name: String {
        device.model.advertising(hardwareAddress: device.address)?.name ?? configuredName
    }

    /// The advertised services now.
    public var advertisedServices: [GATTUUID] {
        configuredServices ?? device.model.services.map(\.uuid)
    }

    /// Whether the device advertises at this peripheral's address now (reachable, not connected,
    /// not about to restart, and its firmware puts it here): only then does a scan hear it, and
    /// a connection attempt reach it.
    public var isAdvertising: Bool {
        device.isAdvertising && link == nil && device.advertisedAddress.uppercased() == address
    }

    private func withLock<T>(_ body: (Mutable) -> T) -> T {
        world.withLock { _ in body(mutable.value) }
    }

    /// The system's link to the device, if one is up.
    var link: StandInLink? {
        get { withLock { $0.link } }
        set { withLock { $0.link = newValue } }
    }

    /// The simulated connection under the current link, for inspecting what the device got.
    public var connection: SimulatedConnection? { link?.connection }

    /// Whether the phone holds a link to it.
    public var isConnected: Bool { link != nil }

    /// Links opened to it so far.
    public var linksOpened: Int { withLock { $0.links } }

    func linkOpened() { withLock { $0.links += 1 } }

    /// Writes without response the stand-in's OS dropped, silently, because its queue was full
    /// (the writer ignored `canSendWriteWithoutResponse`), over every link so far.
    public var writesDropped: Int { withLock { $0.writesDropped } }

    func countDroppedWrite() { withLock { $0.writesDropped += 1 } }

    /// Makes the next connection attempt fail as `fault` says (each fault once, in order).
    public func failNextConnection(_ fault: StandInWorld.ConnectFault) {
        withLock { $0.connectFaults.append(fault) }
    }

    func takeConnectFault() -> StandInWorld.ConnectFault? {
        withLock { $0.connectFaults.isEmpty ? nil : $0.connectFaults.removeFirst() }
    }

    /// The device drops the link (`didDisconnectPeripheral` with `CBError.peripheralDisconnected`),
    /// or, with `supervisionTimeout`, goes out of range (`CBError.connectionTimeout`).
    public func dropLink(supervisionTimeout: Bool = false) {
        device.dropConnection(reason: supervisionTimeout ? "supervision timeout (device out of range)" : "remote user terminated connection")
    }

    /// The device's GATT database changed (Service Changed, as after a buttonless jump or a new
    /// firmware): every discovered service of the current link dies, writes to its
    /// characteristics no longer reach the device, and the owner's delegate gets
    /// `peripheral(_:didModifyServices:)` one connection interval later.
    public func changeServices() {
        link?.changeServices()
    }
}
