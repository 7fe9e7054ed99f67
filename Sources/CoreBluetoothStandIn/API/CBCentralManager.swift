import Foundation
import OTACore
import OTATransportSimulator

/// The central role, as `CBCentralManager`: scans, connects and reports through its delegate on
/// the queue it was given. It joins ``StandInWorld/current`` when created.
open class CBCentralManager: CBManager {
    let world: StandInWorld
    let queue: DispatchQueue
    private let queueKey = DispatchSpecificKey<ObjectIdentifier>()
    let restoreIdentifier: String?
    private weak var storedDelegate: (any CBCentralManagerDelegate)?
    private var storedState: CBManagerState = .unknown
    private var scanning = false
    private var scanFilter: [GATTUUID]?
    private var scanAllowsDuplicates = false
    private var scanGeneration = 0
    private var reported: Set<UUID> = []
    private var known: [UUID: CBPeripheral] = [:]
    private var terminated = false

    /// Creates a manager delivering events on the main queue.
    public convenience override init() {
        self.init(delegate: nil, queue: nil, options: nil)
    }

    /// Creates a manager delivering events to `delegate` on `queue` (`nil`: the main queue).
    public convenience init(delegate: (any CBCentralManagerDelegate)?, queue: dispatch_queue_t?) {
        self.init(delegate: delegate, queue: queue, options: nil)
    }

    /// Creates a manager. With `CBCentralManagerOptionRestoreIdentifierKey`, links a terminated
    /// manager with the same identifier left behind are handed back through
    /// `centralManager(_:willRestoreState:)`, ahead of the first state update.
    ///
    /// Stand-in difference: a `nil` queue means the main queue, as on iOS, and the stand-in waits
    /// for it synchronously; a process that does not run the main queue (a Linux test) must pass
    /// a queue.
    public init(delegate: (any CBCentralManagerDelegate)?, queue: dispatch_queue_t?, options: [String: Any]? = nil) {
        world = StandInWorld.current
        self.queue = queue ?? .main
        restoreIdentifier = options?[CBCentralManagerOptionRestoreIdentifierKey] as? String
        storedDelegate = delegate
        super.init()
        self.queue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
        world.register(self)
        let restored = restoreLinks()
        let now = world.simulation.now
        if !restored.isEmpty {
            let boxed = Unchecked(restored)
            schedule(at: now) { manager in
                manager.onQueue {
                    let dict: [String: Any] = [CBCentralManagerRestoredStatePeripheralsKey: boxed.value]
                    manager.delegate?.centralManager(manager, willRestoreState: dict)
                }
            }
        }
        let state = world.managerState
        schedule(at: now + world.configuration.stateUpdateLatency) { manager in manager.updateState(to: state) }
    }

    private func withLock<T>(_ body: () -> T) -> T {
        world.withLock { _ in body() }
    }

    /// The delegate (weak, as on Darwin).
    open var delegate: (any CBCentralManagerDelegate)? {
        get { withLock { storedDelegate } }
        set { withLock { storedDelegate = newValue } }
    }

    open override var state: CBManagerState { withLock { storedState } }

    /// Whether a scan is running.
    open var isScanning: Bool { withLock { scanning } }

    var isTerminated: Bool { withLock { terminated } }

    // MARK: - Scanning

    /// Scans for peripherals advertising any of `serviceUUIDs` (`nil`: all). A second call
    /// replaces the filter. Honours `CBCentralManagerScanOptionAllowDuplicatesKey`.
    open func scanForPeripherals(withServices serviceUUIDs: [CBUUID]?, options: [String: Any]? = nil) {
        guard ensurePoweredOn("scanForPeripherals") else { return }
        let filter = serviceUUIDs.map { $0.map(\.uuidString).compactMap(GATTUUID.init) }
        let duplicates = (options?[CBCentralManagerScanOptionAllowDuplicatesKey] as? Bool) ?? false
        let generation: Int = withLock {
            scanning = true
            scanFilter = filter
            scanAllowsDuplicates = duplicates
            reported = []
            scanGeneration += 1
            return scanGeneration
        }
        advertisingTick(generation: generation, at: world.simulation.now + .milliseconds(10))
    }

    /// Stops scanning.
    open func stopScan() {
        guard !isTerminated else { return }
        withLock {
            scanning = false
            scanGeneration += 1
        }
    }

    private func advertisingTick(generation: Int, at time: Duration) {
        schedule(at: time) { manager in
            let (live, filter, duplicates) = manager.withLock {
                (manager.scanning && manager.scanGeneration == generation, manager.scanFilter, manager.scanAllowsDuplicates)
            }
            guard live else { return }
            for record in manager.world.advertising {
                if let filter, !filter.contains(where: record.advertisedServices.contains) { continue }
                let fresh = manager.withLock { manager.reported.insert(record.identifier).inserted }
                guard fresh || duplicates else { continue }
                let peripheral = manager.peripheral(for: record)
                var advertisement: [String: Any] = [
                    CBAdvertisementDataLocalNameKey: record.name,
                    CBAdvertisementDataServiceUUIDsKey: record.advertisedServices.map { CBUUID(string: $0.description) },
                    CBAdvertisementDataIsConnectable: NSNumber(value: true),
                ]
                if let data = record.manufacturerData { advertisement[CBAdvertisementDataManufacturerDataKey] = data }
                let boxed = Unchecked(advertisement)
                manager.onQueue {
                    manager.delegate?.centralManager(manager, didDiscover: peripheral, advertisementData: boxed.value, rssi: NSNumber(value: record.rssi))
                }
            }
            manager.advertisingTick(generation: generation, at: time + manager.world.configuration.advertisingInterval)
        }
    }

    // MARK: - Connecting

    /// Connects; there is no timeout: the attempt ends in `didConnect`, `didFailToConnect` or a
    /// cancel. A device out of range is waited for.
    open func connect(_ peripheral: CBPeripheral, options: [String: Any]? = nil) {
        guard ensurePoweredOn("connect") else { return }
        let attempt: Int? = peripheral.withLock {
            guard peripheral.state == .disconnected else { return nil }
            peripheral.state = .connecting
            peripheral.attempt += 1
            return peripheral.attempt
        }
        guard let attempt else { return }
        // (Boxed one by one: a tuple in `Unchecked` destructured in the closure is over-released
        // by Swift 6.3 on Linux.)
        let manager = Unchecked(self)
        let target = Unchecked(peripheral)
        let task = Task(executorPreference: world.simulation.executor) {
            await manager.value.runAttempt(attempt, peripheral: target.value)
        }
        peripheral.withLock { peripheral.connecting = task }
    }

    private func runAttempt(_ attempt: Int, peripheral: CBPeripheral) async {
        let record = peripheral.record
        let interval = record.device.profile.link.connectionInterval
        let clock = world.clock
        func current() -> Bool { peripheral.withLock { peripheral.attempt == attempt && peripheral.state == .connecting } }
        if let fault = record.takeConnectFault() {
            try? await clock.sleep(for: interval * 3)
            guard current() else { return }
            peripheral.withLock { peripheral.state = .disconnected }
            switch fault {
            case .failToConnect, .failToConnectThenDisconnect:
                deliverCentral { manager, delegate in delegate.centralManager(manager, didFailToConnect: peripheral, error: CBError(.connectionFailed)) }
                if fault == .failToConnectThenDisconnect {
                    deliverCentral { manager, delegate in
                        delegate.centralManager(manager, didDisconnectPeripheral: peripheral, error: CBError(.peripheralDisconnected))
                    }
                }
            case .disconnectWithoutConnect:
                deliverCentral { manager, delegate in
                    delegate.centralManager(manager, didDisconnectPeripheral: peripheral, error: CBError(.connectionTimeout))
                }
            }
            return
        }
        // Pending until the device advertises at this peripheral's address (iOS connects to an
        // address: a device that moved to another one is not there).
        while !record.isAdvertising {
            do { try await clock.sleep(for: .milliseconds(50)) } catch { return }
            guard current() else { return }
        }
        let connector = SimulatedConnector(
            device: record.device, centralMTU: world.configuration.centralMTU, overflow: .dropSilently, address: record.address)
        let connection: SimulatedConnection
        do throws(TransportError) {
            connection = try await connector.connectSimulated()
        } catch {
            guard current() else { return }
            peripheral.withLock { peripheral.state = .disconnected }
            deliverCentral { manager, delegate in delegate.centralManager(manager, didFailToConnect: peripheral, error: CBError(.connectionFailed)) }
            return
        }
        let link = StandInLink(connection: connection, peripheral: record, owner: peripheral, restoreIdentifier: restoreIdentifier)
        let won: Bool = peripheral.withLock {
            guard peripheral.attempt == attempt, peripheral.state == .connecting, !isTerminated, state == .poweredOn else { return false }
            peripheral.state = .connected
            peripheral.link = link
            peripheral.discovered = nil
            peripheral.connecting = nil
            record.link = link
            return true
        }
        guard won else {
            connection.drop(.closedByApp)
            return
        }
        record.linkOpened()
        link.start()
        deliverCentral { manager, delegate in delegate.centralManager(manager, didConnect: peripheral) }
    }

    /// Cancels a pending or an active connection; `didDisconnectPeripheral` follows with no error.
    open func cancelPeripheralConnection(_ peripheral: CBPeripheral) {
        guard ensurePoweredOn("cancelPeripheralConnection") else { return }
        let (wasConnecting, link): (Bool, StandInLink?) = peripheral.withLock {
            switch peripheral.state {
            case .connecting:
                peripheral.attempt += 1
                peripheral.state = .disconnected
                peripheral.connecting?.cancel()
                peripheral.connecting = nil
                return (true, nil)
            case .connected:
                peripheral.state = .disconnecting
                return (false, peripheral.link)
            case .disconnected, .disconnecting:
                return (false, nil)
            }
        }
        if wasConnecting {
            let boxed = Unchecked(peripheral)
            schedule(at: world.simulation.now + .milliseconds(1)) { manager in
                manager.deliverCentral { manager, delegate in delegate.centralManager(manager, didDisconnectPeripheral: boxed.value, error: nil) }
            }
        }
        // `.disconnecting` until the link reports the drop.
        link?.close(.local)
    }

    // MARK: - Retrieval

    /// The peripherals of this world with these identifiers (only when powered on, as Nordic's
    /// mock models iOS 13+).
    open func retrievePeripherals(withIdentifiers identifiers: [UUID]) -> [CBPeripheral] {
        guard ensurePoweredOn("retrievePeripherals") else { return [] }
        return identifiers.compactMap { world.peripheral($0) }.map(peripheral(for:))
    }

    /// The peripherals the system is connected to that expose any of `serviceUUIDs`; the app
    /// must still connect them itself.
    open func retrieveConnectedPeripherals(withServices serviceUUIDs: [CBUUID]) -> [CBPeripheral] {
        guard ensurePoweredOn("retrieveConnectedPeripherals") else { return [] }
        let wanted = serviceUUIDs.map(\.uuidString).compactMap(GATTUUID.init)
        return world.peripherals.filter { record in
            record.isConnected && record.device.model.services.contains { wanted.contains($0.uuid) }
        }.map(peripheral(for:))
    }

    // MARK: - Plumbing

    /// This manager's object for `record` (one per identifier, as iOS keeps them).
    func peripheral(for record: StandInPeripheral) -> CBPeripheral {
        withLock {
            if let existing = known[record.identifier] { return existing }
            let created = CBPeripheral(record: record, manager: self)
            known[record.identifier] = created
            return created
        }
    }

    private func ensurePoweredOn(_ call: String) -> Bool {
        guard !isTerminated else { return false }
        guard state == .poweredOn else {
            world.logMisuse("API MISUSE: \(call) while the manager is \(state)")
            return false
        }
        return true
    }

    /// Runs `body` on the queue: synchronously, so that the simulation does not move on while a
    /// callback is under way (inline when already there).
    func onQueue(_ body: () -> Void) {
        if DispatchQueue.getSpecific(key: queueKey) == ObjectIdentifier(self) {
            body()
        } else {
            queue.sync(execute: body)
        }
    }

    /// Calls the delegate on the queue, unless the app's process ended.
    func deliverCentral(_ body: (CBCentralManager, any CBCentralManagerDelegate) -> Void) {
        guard !isTerminated else { return }
        onQueue {
            guard let delegate = self.delegate else { return }
            body(self, delegate)
        }
    }

    private func schedule(at time: Duration, _ body: @escaping (CBCentralManager) -> Void) {
        let manager = Unchecked(self)
        let action = Unchecked(body)
        world.simulation.schedule(at: time) {
            guard !manager.value.isTerminated else { return }
            action.value(manager.value)
        }
    }

    // MARK: - World events

    func radioChanged(to newState: CBManagerState) {
        schedule(at: world.simulation.now + world.configuration.stateUpdateLatency) { manager in manager.updateState(to: newState) }
        guard newState != .poweredOn else { return }
        let peripherals: [CBPeripheral] = withLock {
            scanning = false
            scanGeneration += 1
            return Array(known.values)
        }
        for peripheral in peripherals {
            peripheral.withLock {
                peripheral.attempt += 1
                peripheral.connecting?.cancel()
                peripheral.connecting = nil
                peripheral.link = nil
                peripheral.discovered = nil
                peripheral.state = .disconnected
            }
        }
    }

    private func updateState(to newState: CBManagerState) {
        let changed: Bool = withLock {
            guard storedState != newState else { return false }
            storedState = newState
            return true
        }
        guard changed else { return }
        deliverCentral { manager, delegate in delegate.centralManagerDidUpdateState(manager) }
    }

    func terminate() {
        let peripherals: [CBPeripheral] = withLock {
            terminated = true
            scanning = false
            return Array(known.values)
        }
        for peripheral in peripherals {
            let link: StandInLink? = peripheral.withLock {
                peripheral.connecting?.cancel()
                return peripheral.link
            }
            guard let link else { continue }
            if restoreIdentifier == nil {
                link.close(.silent)
            } else {
                link.owner = nil
            }
        }
    }

    /// Takes over the links a terminated manager with this restore identifier left behind.
    private func restoreLinks() -> [CBPeripheral] {
        guard let restoreIdentifier else { return [] }
        var restored: [CBPeripheral] = []
        for record in world.peripherals {
            guard let link = record.link, link.isUp, link.owner == nil, link.restoreIdentifier == restoreIdentifier else { continue }
            let peripheral = peripheral(for: record)
            peripheral.withLock {
                peripheral.state = .connected
                peripheral.link = link
                peripheral.discovered = nil
            }
            link.owner = peripheral
            restored.append(peripheral)
        }
        return restored
    }
}
