import Foundation
import OTACore
import OTATransportSimulator

/// A remote device, as `CBPeer`.
open class CBPeer: NSObject {
    let peerIdentifier: UUID
    init(identifier: UUID) { peerIdentifier = identifier }

    /// The identifier the system gave the peer (stable for this phone).
    open var identifier: UUID { peerIdentifier }
}

/// How a peripheral is connected, as `CBPeripheralState`.
public enum CBPeripheralState: Int, Sendable {
    case disconnected = 0
    case connecting = 1
    case connected = 2
    case disconnecting = 3
}

/// How a value is written, as `CBCharacteristicWriteType`.
public enum CBCharacteristicWriteType: Int, Sendable {
    case withResponse = 0
    case withoutResponse = 1
}

/// A peripheral as one central manager sees it, as `CBPeripheral`; behind it, a
/// ``StandInPeripheral`` of the manager's world.
open class CBPeripheral: CBPeer {
    let record: StandInPeripheral
    private(set) weak var manager: CBCentralManager?
    private weak var storedDelegate: (any CBPeripheralDelegate)?
    private var storedState: CBPeripheralState = .disconnected
    /// What `services` returns; guarded by the world's lock.
    var discovered: [CBService]?
    var link: StandInLink?
    var attempt = 0
    var connecting: Task<Void, Never>?
    private var world: StandInWorld { record.world }

    init(record: StandInPeripheral, manager: CBCentralManager) {
        self.record = record
        self.manager = manager
        cachedName = record.name
        super.init(identifier: record.identifier)
    }

    func withLock<T>(_ body: () -> T) -> T {
        world.withLock { _ in body() }
    }

    /// The delegate (weak, as on Darwin).
    open var delegate: (any CBPeripheralDelegate)? {
        get { withLock { storedDelegate } }
        set { withLock { storedDelegate = newValue } }
    }

    /// The device's name as iOS caches it for this identifier: what it advertised when this
    /// manager first saw it. iOS keeps a peripheral's GAP name and does not follow its
    /// advertisements, so a device that restarted into another role under the same identifier
    /// (a bootloader that keeps the application's address) still shows the old name here; the
    /// advertisement's `CBAdvertisementDataLocalNameKey` carries the new one.
    open var name: String? { cachedName }
    private let cachedName: String

    /// The connection state.
    open var state: CBPeripheralState {
        get { withLock { storedState } }
        set { withLock { storedState = newValue } }
    }

    /// The discovered services; `nil` until a discovery succeeded, and again after a disconnect.
    open var services: [CBService]? { withLock { discovered } }

    /// Whether a write without response would be queued now. Reads false before the first write
    /// of a connection when ``StandInWorld/Configuration/canSendIsFalseBeforeFirstWrite`` is set.
    open var canSendWriteWithoutResponse: Bool { currentLink?.canSendWriteWithoutResponse ?? false }

    var currentLink: StandInLink? { withLock { storedState == .connected ? link : nil } }

    // MARK: - Discovery

    /// Discovers services (`nil`: all), answered by `peripheral(_:didDiscoverServices:)`.
    open func discoverServices(_ serviceUUIDs: [CBUUID]?) {
        guard let link = usableLink("discoverServices") else { return }
        let wanted = serviceUUIDs.map { Set($0.map(\.uuidString).compactMap(GATTUUID.init)) }
        after(roundTrips: 2, on: link) { peripheral in
            let table = link.connection.characteristics
            var found: [CBService] = []
            peripheral.withLock {
                let known = peripheral.discovered ?? []
                for uuid in Set(table.keys.map(\.service)).sorted() where wanted?.contains(uuid) ?? true {
                    if let existing = known.first(where: { GATTUUID($0.uuid.uuidString) == uuid }) {
                        found.append(existing)
                    } else {
                        found.append(CBService(uuid: CBUUID(string: uuid.description), peripheral: peripheral))
                    }
                }
                let kept = known.filter { service in !found.contains { $0 === service } }
                peripheral.discovered = kept + found
            }
            link.adopt(found)
            link.deliver { peripheral, delegate in delegate.peripheral(peripheral, didDiscoverServices: nil) }
        }
    }

    /// Discovers a service's characteristics (`nil`: all), answered by
    /// `peripheral(_:didDiscoverCharacteristicsFor:error:)`.
    open func discoverCharacteristics(_ characteristicUUIDs: [CBUUID]?, for service: CBService) {
        guard let link = usableLink("discoverCharacteristics") else { return }
        let wanted = characteristicUUIDs.map { Set($0.map(\.uuidString).compactMap(GATTUUID.init)) }
        let serviceBox = Unchecked(service)
        after(roundTrips: 2, on: link) { peripheral in
            let service = serviceBox.value
            guard let serviceUUID = GATTUUID(service.uuid.uuidString) else { return }
            let table = link.connection.characteristics.filter { $0.key.service == serviceUUID }
            peripheral.withLock {
                var characteristics = service.discoveredCharacteristics ?? []
                for (id, properties) in table.sorted(by: { $0.key.characteristic < $1.key.characteristic })
                where wanted?.contains(id.characteristic) ?? true {
                    guard !characteristics.contains(where: { GATTUUID($0.uuid.uuidString) == id.characteristic }) else { continue }
                    characteristics.append(
                        CBCharacteristic(
                            uuid: CBUUID(string: id.characteristic.description),
                            properties: CBCharacteristicProperties(rawValue: UInt(properties.rawValue)), service: service))
                }
                service.discoveredCharacteristics = characteristics
            }
            let error: (any Error)? = service.isInvalidated ? CBATTError(.invalidHandle) : nil
            link.deliver { peripheral, delegate in delegate.peripheral(peripheral, didDiscoverCharacteristicsFor: service, error: error) }
        }
    }

    // MARK: - Values

    /// Reads a value, answered by `peripheral(_:didUpdateValueFor:error:)`.
    open func readValue(for characteristic: CBCharacteristic) {
        guard let link = usableLink("readValue"), let id = Self.id(of: characteristic) else { return }
        link.issue(.read(characteristic, id))
    }

    /// Writes a value. With response, `peripheral(_:didWriteValueFor:error:)` answers; without,
    /// nothing ever does, and a write issued while the OS queue is full is dropped silently.
    open func writeValue(_ data: Data, for characteristic: CBCharacteristic, type: CBCharacteristicWriteType) {
        guard let link = usableLink("writeValue"), let id = Self.id(of: characteristic) else { return }
        switch type {
        case .withoutResponse:
            guard data.count <= maximumWriteValueLength(for: .withoutResponse) else {
                // What iOS does with an oversize write without response is unconfirmed.
                world.logMisuse("writeValue: \(data.count) bytes exceed maximumWriteValueLength(for: .withoutResponse); dropped")
                record.countDroppedWrite()
                return
            }
            link.issue(.command(characteristic, id, data))
        case .withResponse:
            link.issue(.request(characteristic, id, data))
        }
    }

    /// Turns notifications (or indications) on or off, answered by
    /// `peripheral(_:didUpdateNotificationStateFor:error:)`.
    open func setNotifyValue(_ enabled: Bool, for characteristic: CBCharacteristic) {
        guard let link = usableLink("setNotifyValue"), let id = Self.id(of: characteristic) else { return }
        link.issue(.notify(characteristic, id, enabled))
    }

    /// The largest value one write of `type` takes: ATT MTU − 3 without response, 512 with
    /// response (iOS splits long writes itself), 0 when not connected.
    open func maximumWriteValueLength(for type: CBCharacteristicWriteType) -> Int {
        guard let link = currentLink else { return 0 }
        switch type {
        case .withoutResponse: return link.attMTU - 3
        case .withResponse: return 512
        }
    }

    // MARK: - Plumbing

    static func id(of characteristic: CBCharacteristic) -> CharacteristicID? {
        guard let service = characteristic.service, let serviceUUID = GATTUUID(service.uuid.uuidString),
            let uuid = GATTUUID(characteristic.uuid.uuidString)
        else { return nil }
        return CharacteristicID(service: serviceUUID, characteristic: uuid)
    }

    private func usableLink(_ call: String) -> StandInLink? {
        guard let manager, !manager.isTerminated else { return nil }
        guard manager.state == .poweredOn else {
            world.logMisuse("\(call) while the manager is \(manager.state)")
            return nil
        }
        guard let link = currentLink else {
            world.logMisuse("\(call) on a peripheral that is not connected")
            return nil
        }
        return link
    }

    /// Runs `body` (on the simulation) `roundTrips` connection intervals from now, if `link` is
    /// still this peripheral's.
    private func after(roundTrips: Int, on link: StandInLink, _ body: @escaping (CBPeripheral) -> Void) {
        let interval = record.device.profile.link.connectionInterval
        let peripheral = Unchecked(self)
        let action = Unchecked(body)
        world.simulation.schedule(at: world.simulation.now + interval * roundTrips) {
            guard peripheral.value.currentLink === link else { return }
            action.value(peripheral.value)
        }
    }

    /// Calls the delegate on the manager's queue, if `link` is still this peripheral's and the
    /// manager is alive (no callback comes after a disconnect, as on iOS).
    func deliver(from link: StandInLink, _ body: @escaping (CBPeripheral, any CBPeripheralDelegate) -> Void) {
        guard let manager, !manager.isTerminated else { return }
        manager.onQueue {
            guard self.currentLink === link, let delegate = self.delegate else { return }
            body(self, delegate)
        }
    }

    // MARK: - Links

    /// The link went down without a callback (Bluetooth off).
    func linkClosedSilently(_ closed: StandInLink) {
        withLock {
            guard link === closed else { return }
            link = nil
            discovered = nil
            storedState = .disconnected
        }
    }

    /// The link went down: `didDisconnectPeripheral` with `error` (`nil`: the app cancelled).
    func linkClosed(_ closed: StandInLink, error: (any Error)?) {
        let wasOurs: Bool = withLock {
            guard link === closed else { return false }
            link = nil
            discovered = nil
            storedState = .disconnected
            return true
        }
        guard wasOurs, let manager else { return }
        manager.deliverCentral { manager, delegate in
            delegate.centralManager(
                manager, didDisconnectPeripheral: self, timestamp: Date().timeIntervalSinceReferenceDate, isReconnecting: false, error: error)
        }
    }
}
