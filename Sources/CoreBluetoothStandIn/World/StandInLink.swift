import Foundation
import OTACore
import OTATransportSimulator

/// One link the stand-in's "OS" holds to a simulated device: the simulator's connection, the
/// OS queue of GATT operations in front of it, and the app-side `CBPeripheral` it reports to.
///
/// Operations leave in the order they were issued (writes without response, writes with
/// response, reads and notification changes alike), one at a time, as on one ATT bearer.
/// Writes without response wait in a queue of ``StandInWorld/Configuration/writeQueueDepth``;
/// one issued while it is full is dropped without a word.
final class StandInLink: Sendable {
    enum Operation {
        case command(CBCharacteristic, CharacteristicID, Data)
        case request(CBCharacteristic, CharacteristicID, Data)
        case read(CBCharacteristic, CharacteristicID)
        case notify(CBCharacteristic, CharacteristicID, Bool)
    }

    enum CloseKind {
        /// The app cancelled: `didDisconnectPeripheral` with no error.
        case local
        /// Bluetooth went off or the app's process ended: no callback.
        case silent
    }

    final class Mutable {
        var owner: CBPeripheral?
        /// The restore identifier of the manager that opened it (it survives that manager).
        var restoreIdentifier: String?
        var operations: [Operation] = []
        var commandsQueued = 0
        var pumping = false
        var commandsSent = 0
        var owesReadyCallback = false
        var closeKind: CloseKind?
        var isUp = true
        var forwarders: [CharacteristicID: Task<Void, Never>] = [:]
        var services: [CBService] = []
    }

    let connection: SimulatedConnection
    let peripheral: StandInPeripheral
    private let mutable = Unchecked(Mutable())
    private var world: StandInWorld { peripheral.world }

    init(connection: SimulatedConnection, peripheral: StandInPeripheral, owner: CBPeripheral, restoreIdentifier: String?) {
        self.connection = connection
        self.peripheral = peripheral
        mutable.value.owner = owner
        mutable.value.restoreIdentifier = restoreIdentifier
    }

    func withLock<T>(_ body: (Mutable) -> T) -> T {
        world.withLock { _ in body(mutable.value) }
    }

    var owner: CBPeripheral? {
        get { withLock { $0.owner } }
        set { withLock { $0.owner = newValue } }
    }

    var restoreIdentifier: String? { withLock { $0.restoreIdentifier } }

    var isUp: Bool { withLock { $0.isUp } }

    /// Starts watching the simulated connection for a drop.
    func start() {
        let watched = Unchecked(self)
        Task(executorPreference: world.simulation.executor) {
            for await reason in watched.value.connection.disconnections {
                watched.value.linkWentDown(reason)
            }
        }
    }

    // MARK: - Write-without-response flow control

    /// What `canSendWriteWithoutResponse` reads.
    var canSendWriteWithoutResponse: Bool {
        let configuration = world.configuration
        return withLock { state in
            guard state.isUp else { return false }
            if configuration.canSendIsFalseBeforeFirstWrite && state.commandsSent == 0 { return false }
            return state.commandsQueued < configuration.writeQueueDepth
        }
    }

    /// The MTU the link negotiated.
    var attMTU: Int { connection.link.attMTU }

    // MARK: - Operations

    /// Queues `operation`; a write without response finding the queue full is dropped (returns false).
    @discardableResult
    func issue(_ operation: Operation) -> Bool {
        let depth = world.configuration.writeQueueDepth
        let (accepted, startPump): (Bool, Bool) = withLock { state in
            guard state.isUp else { return (false, false) }
            if case .command = operation {
                state.commandsSent += 1
                guard state.commandsQueued < depth else {
                    state.owesReadyCallback = true
                    return (false, false)
                }
                state.commandsQueued += 1
                if state.commandsQueued == depth || state.commandsSent == 1 { state.owesReadyCallback = true }
            }
            state.operations.append(operation)
            let start = !state.pumping
            state.pumping = true
            return (true, start)
        }
        if case .command = operation, !accepted, isUp { peripheral.countDroppedWrite() }
        if startPump {
            let pumped = Unchecked(self)
            Task(executorPreference: world.simulation.executor) { await pumped.value.pump() }
        }
        return accepted
    }

    private func pump() async {
        while let operation = withLock({ state -> Operation? in
            guard state.isUp, !state.operations.isEmpty else {
                state.pumping = false
                return nil
            }
            return state.operations.removeFirst()
        }) {
            await perform(operation)
        }
    }

    private func perform(_ operation: Operation) async {
        switch operation {
        case .command(let characteristic, let id, let value):
            let stale = characteristic.service?.isInvalidated ?? true
            var taken = false
            if !stale {
                do throws(TransportError) {
                    try await connection.write(value, to: id, kind: .withoutResponse)
                    taken = true
                } catch {
                    // The link is down (the drop is reported by the watcher) or the write is
                    // refused: either way a write without response is lost without a word.
                }
            }
            let configuration = world.configuration
            let ready: Bool = withLock { state in
                state.commandsQueued = max(0, state.commandsQueued - 1)
                guard state.isUp else { return false }
                if state.owesReadyCallback && state.commandsQueued < configuration.writeQueueDepth {
                    state.owesReadyCallback = false
                    return configuration.deliversReadyCallback
                }
                return configuration.spuriousReadyCallbacks && taken
            }
            if ready {
                deliver { peripheral, delegate in delegate.peripheralIsReady(toSendWriteWithoutResponse: peripheral) }
            }
        case .request(let characteristic, let id, let value):
            var failure: (any Error)?
            if characteristic.service?.isInvalidated ?? true {
                failure = CBATTError(.invalidHandle)
            } else {
                do throws(TransportError) {
                    try await connection.write(value, to: id, kind: .withResponse)
                } catch {
                    guard let mapped = Self.attError(error) else { return }
                    failure = mapped
                }
            }
            deliver { peripheral, delegate in delegate.peripheral(peripheral, didWriteValueFor: characteristic, error: failure) }
        case .read(let characteristic, let id):
            var failure: (any Error)?
            if characteristic.service?.isInvalidated ?? true {
                failure = CBATTError(.invalidHandle)
            } else {
                do throws(TransportError) {
                    let value = try await connection.read(id)
                    withLock { _ in characteristic.latestValue = value }
                } catch {
                    guard let mapped = Self.attError(error) else { return }
                    failure = mapped
                }
            }
            deliver { peripheral, delegate in delegate.peripheral(peripheral, didUpdateValueFor: characteristic, error: failure) }
        case .notify(let characteristic, let id, let enabled):
            await setNotify(enabled, characteristic: characteristic, id: id)
        }
    }

    private func setNotify(_ enabled: Bool, characteristic: CBCharacteristic, id: CharacteristicID) async {
        var failure: (any Error)?
        let already = withLock { _ in characteristic.notifying == enabled }
        if characteristic.service?.isInvalidated ?? true {
            failure = CBATTError(.invalidHandle)
        } else if !already, enabled {
            do throws(TransportError) {
                let stream = try await connection.notifications(from: id)
                let forwardedLink = Unchecked(self)
                let forwardedCharacteristic = Unchecked(characteristic)
                let task = Task(executorPreference: world.simulation.executor) {
                    for await value in stream {
                        let (link, characteristic) = (forwardedLink.value, forwardedCharacteristic.value)
                        link.withLock { _ in characteristic.latestValue = value }
                        link.deliver { peripheral, delegate in delegate.peripheral(peripheral, didUpdateValueFor: characteristic, error: nil) }
                    }
                }
                withLock { state in
                    state.forwarders[id]?.cancel()
                    state.forwarders[id] = task
                    characteristic.notifying = true
                }
            } catch {
                guard let mapped = Self.attError(error) else { return }
                failure = mapped
            }
        } else if !already {
            let task = withLock { state in
                characteristic.notifying = false
                return state.forwarders.removeValue(forKey: id)
            }
            task?.cancel()
        }
        deliver { peripheral, delegate in delegate.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: failure) }
    }

    /// The CoreBluetooth error for a failed operation, or `nil` when the link is down (no
    /// callback comes after a disconnect).
    private static func attError(_ error: TransportError) -> (any Error)? {
        switch error.kind {
        case .disconnected: return nil
        case .attError(let code):
            if let known = CBATTError.Code(rawValue: Int(code)) { return CBATTError(known) }
            return NSError(domain: CBATTErrorDomain, code: Int(code))
        case .notPermitted: return CBATTError(.writeNotPermitted)
        case .unknownCharacteristic: return CBATTError(.attributeNotFound)
        case .valueTooLong: return CBATTError(.invalidAttributeValueLength)
        case .connectionFailed, .other: return CBError(.unknown)
        }
    }

    /// Calls the owner's delegate on its manager's queue, if the link is still up and owned.
    func deliver(_ body: @escaping (CBPeripheral, any CBPeripheralDelegate) -> Void) {
        guard let owner = withLock({ $0.isUp ? $0.owner : nil }) else { return }
        owner.deliver(from: self, body)
    }

    // MARK: - Service Changed

    func changeServices() {
        let dead: [CBService] = withLock { state in
            let dead = state.services
            for service in dead { service.isInvalidated = true }
            state.services = []
            if let owner = state.owner {
                owner.discovered = owner.discovered?.filter { !$0.isInvalidated }
            }
            return dead
        }
        let interval = peripheral.device.profile.link.connectionInterval
        let link = Unchecked(self)
        let services = Unchecked(dead)
        world.simulation.schedule(at: world.simulation.now + interval) {
            link.value.deliver { peripheral, delegate in delegate.peripheral(peripheral, didModifyServices: services.value) }
        }
    }

    func adopt(_ services: [CBService]) {
        withLock { $0.services.append(contentsOf: services) }
    }

    // MARK: - Going down

    /// Closes the link from the phone's side.
    func close(_ kind: CloseKind) {
        let first: Bool = withLock { state in
            guard state.closeKind == nil, state.isUp else { return false }
            state.closeKind = kind
            return true
        }
        guard first else { return }
        connection.drop(kind == .local ? .closedByApp : DisconnectReason("Bluetooth turned off", isLocal: true))
        // The watcher reports it; make the state visible at once for the app's own calls.
        withLock { $0.isUp = false }
        tearDown()
        if kind == .silent { owner?.linkClosedSilently(self) }
    }

    private func linkWentDown(_ reason: DisconnectReason) {
        let (kind, owner): (CloseKind?, CBPeripheral?) = withLock { state in
            state.isUp = false
            return (state.closeKind, state.owner)
        }
        tearDown()
        switch kind {
        case .silent: return
        case .local: owner?.linkClosed(self, error: nil)
        case nil:
            let timeout = reason.description.contains("supervision timeout") || reason.description.contains("out of range")
            owner?.linkClosed(self, error: CBError(timeout ? .connectionTimeout : .peripheralDisconnected))
        }
    }

    private func tearDown() {
        let tasks: [Task<Void, Never>] = withLock { state in
            state.operations.removeAll()
            state.commandsQueued = 0
            let tasks = Array(state.forwarders.values)
            state.forwarders.removeAll()
            return tasks
        }
        for task in tasks { task.cancel() }
        if peripheral.link === self { peripheral.link = nil }
    }
}
