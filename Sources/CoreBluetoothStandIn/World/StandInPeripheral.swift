import Foundation
import OTACore
import OTATransportSimulator

/// A peripheral within range of a ``StandInWorld``: a ``SimulatedDevice`` and what it
/// advertises. Tests control and inspect it here; apps see it as a `CBPeripheral`.
public final class StandInPeripheral: Sendable {
    /// What `CBPeripheral.identifier` reads.
    public let identifier: UUID
    /// The simulated device behind it.
    public let device: SimulatedDevice
    /// The advertised local name.
    public let name: String
    /// The advertised services.
    public let advertisedServices: [GATTUUID]
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
        world: StandInWorld, identifier: UUID, device: SimulatedDevice, name: String, advertisedServices: [GATTUUID], rssi: Int,
        manufacturerData: Data?
    ) {
        self.world = world
        self.identifier = identifier
        self.device = device
        self.name = name
        self.advertisedServices = advertisedServices
        self.rssi = rssi
        self.manufacturerData = manufacturerData
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
