import Foundation
import OTACore
import Synchronization

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothStandIn
#endif

/// The delegate of the transport's manager and of every peripheral it uses: turns callbacks
/// into resumed continuations. Everything here is touched only on ``queue``.
final class CentralBridge: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    // @unchecked: every mutable field, and every CoreBluetooth object, is confined to `queue`
    // (callbacks arrive there; callers reach it through `onQueue`).

    typealias Resume<T: Sendable> = Answer<Result<T, TransportError>>

    /// One connection attempt: the first terminal event wins, later ones are ignored.
    struct Attempt {
        var id: UInt64
        var continuation: Resume<Void>
    }

    /// One scan a scanner asked for.
    struct Scan {
        var services: [GATTUUID]?
        var allowDuplicates: Bool
        /// Names only from the advertisement (`CBAdvertisementDataLocalNameKey`), never the name
        /// iOS cached for the peripheral (which may be an earlier role's).
        var advertisedNamesOnly = false
        var continuation: AsyncThrowingStream<DiscoveredDevice, any Error>.Continuation
    }

    let queue: DispatchQueue
    private let queueKey = DispatchSpecificKey<UInt8>()
    let clock: any Clock<Duration>
    private(set) var manager: CBCentralManager!

    var stateKnown = false
    private var stateWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    /// Peripherals the transport uses, held strongly (a released `CBPeripheral` cancels its connection).
    var peripherals: [UUID: CBPeripheral] = [:]
    var restored: [UUID] = []
    var attempts: [UUID: Attempt] = [:]
    var sessions: [UUID: CoreBluetoothTransport] = [:]
    var scans: [UInt64: Scan] = [:]
    private var nextID: UInt64 = 0

    init(clock: any Clock<Duration>, restoreIdentifier: String?, showPowerAlert: Bool) {
        self.clock = clock
        queue = DispatchQueue(label: "swift-ble-ota.corebluetooth")
        super.init()
        queue.setSpecific(key: queueKey, value: 1)
        var options: [String: Any] = [CBCentralManagerOptionShowPowerAlertKey: NSNumber(value: showPowerAlert)]
        if let restoreIdentifier { options[CBCentralManagerOptionRestoreIdentifierKey] = restoreIdentifier }
        // Created on the caller's thread (callbacks still come on `queue`); nothing reads
        // `manager` from a callback, which get the manager as their argument.
        manager = CBCentralManager(delegate: self, queue: queue, options: options)
    }

    // MARK: - The queue

    /// Runs `body` on the queue (inline when already there) and returns its result.
    func onQueue<T>(_ body: () throws(TransportError) -> T) throws(TransportError) -> T {
        if DispatchQueue.getSpecific(key: queueKey) != nil { return try body() }
        let result: Result<T, TransportError> = queue.sync {
            do throws(TransportError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    func onQueue<T>(_ body: () -> T) -> T {
        if DispatchQueue.getSpecific(key: queueKey) != nil { return body() }
        return queue.sync(execute: body)
    }

    func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Suspends until a callback answers: on the queue, `register` files the answer (or answers
    /// at once); a cancellation answers "cancelled" at once, and `withdraw` later takes the
    /// answered entry out of wherever `register` filed it.
    func suspend<T: Sendable>(
        register: (UInt64, Resume<T>) -> Result<T, TransportError>?,
        withdraw: @escaping @Sendable (UInt64) -> Resume<T>?
    ) async -> Result<T, TransportError> {
        let id = onQueue { makeID() }
        let answer = Resume<T>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard answer.attach(continuation) else { return }
                let immediate: Result<T, TransportError>? = onQueue { answer.isAnswered ? nil : register(id, answer) }
                if let immediate { answer.resume(returning: immediate) }
            }
        } onCancel: {
            answer.resume(returning: .failure(CoreBluetoothFailure.cancelled))
            afterCancellation { _ = withdraw(id) }
        }
    }

    /// Runs work a cancellation handler leaves on the queue, later (and a stream's
    /// `onTermination`, which a cancelled consumer's handler runs): a handler must not wait for
    /// the queue. The runtime runs it holding the cancelled task's lock, and a callback on the
    /// queue that resumes that task at the same moment waits for the same lock, so a handler
    /// waiting for the queue (`onQueue`) would wait for ever (decision 0080). What the task waits
    /// for is answered in the handler itself (``Answer``), so that a simulation in virtual time
    /// sees it runnable at once; only tidying is left for later.
    func afterCancellation(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    // MARK: - State

    /// Returns once the manager reported its first state (restoration comes before it).
    func waitForFirstState() async {
        let id: UInt64? = onQueue { stateKnown ? nil : makeID() }
        guard let id else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready: Bool = onQueue {
                if stateKnown { return true }
                stateWaiters[id] = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Waits until Bluetooth is on, for at most `limit`.
    ///
    /// - Throws: `.connectionFailed` at once when Bluetooth is not allowed or not supported,
    ///   or when it is still off after `limit`.
    func waitForPoweredOn(within limit: Duration) async throws(TransportError) {
        let clock = self.clock
        do {
            try await withTimeout(limit, clock: clock, timeoutError: OTAError(.timeout, "")) { [self] in
                while true {
                    await waitForFirstState()
                    let state = onQueue { manager.state }
                    if state == .poweredOn { return }
                    if CoreBluetoothFailure.isPermanent(state) { throw TransportError(.connectionFailed, CoreBluetoothFailure.stateProblem(state)!) }
                    await waitForStateChange(from: state)
                    try Task.checkCancellation()
                }
            }
        } catch let error as TransportError {
            throw error
        } catch is CancellationError {
            throw CoreBluetoothFailure.cancelled
        } catch {
            let state = onQueue { manager.state }
            if Task.isCancelled { throw CoreBluetoothFailure.cancelled }
            throw TransportError(.connectionFailed, CoreBluetoothFailure.stateProblem(state) ?? "Bluetooth did not become ready")
        }
    }

    private var changeWaiters: [UInt64: Resume<Void>] = [:]

    /// Returns at the next state update, or at once when the state is no longer `observed` (or
    /// the task is cancelled: the caller checks).
    private func waitForStateChange(from observed: CBManagerState) async {
        _ = await suspend { id, answer in
            if manager.state != observed { return .success(()) }
            changeWaiters[id] = answer
            return nil
        } withdraw: { [self] id in
            changeWaiters.removeValue(forKey: id)
        }
    }

    // MARK: - CBCentralManagerDelegate

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        stateKnown = true
        let state = central.state
        for (_, waiter) in stateWaiters { waiter.resume() }
        stateWaiters.removeAll()
        for (_, waiter) in changeWaiters { waiter.resume(returning: .success(())) }
        changeWaiters.removeAll()
        if state == .poweredOn {
            // A scan does not resume by itself after Bluetooth comes back.
            startScanning(central)
            return
        }
        // Links are gone without a didDisconnectPeripheral; attempts with them.
        let problem = CoreBluetoothFailure.stateProblem(state) ?? "Bluetooth is not on"
        for session in Array(sessions.values) { session.linkDown(DisconnectReason(problem)) }
        for (_, attempt) in attempts { attempt.continuation.resume(returning: .failure(TransportError(.connectionFailed, problem))) }
        attempts.removeAll()
        if CoreBluetoothFailure.isPermanent(state) {
            for (_, scan) in scans { scan.continuation.finish(throwing: OTAError(.connectionFailed, problem)) }
            scans.removeAll()
        }
    }

    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {
        let restoredPeripherals = dict[CBCentralManagerRestoredStatePeripheralsKey] as? [CBPeripheral] ?? []
        for peripheral in restoredPeripherals {
            // Make the transport the delegate before anything else.
            peripheral.delegate = self
            peripherals[peripheral.identifier] = peripheral
            restored.append(peripheral.identifier)
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        peripherals[peripheral.identifier] = peripheral
        let advertised = (advertisementData[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] ?? []).compactMap { GATTUUID($0.uuidString) }
        var manufacturer: [UInt16: Data] = [:]
        if let data = advertisementData[CBAdvertisementDataManufacturerDataKey] as? Data, data.count >= 2 {
            let bytes = [UInt8](data)
            manufacturer[UInt16(bytes[0]) | UInt16(bytes[1]) << 8] = Data(bytes[2...])
        }
        let rssi = RSSI.intValue == 127 ? nil : RSSI.intValue
        let localName = advertisementData[CBAdvertisementDataLocalNameKey] as? String
        func device(named name: String?) -> DiscoveredDevice {
            DiscoveredDevice(
                address: peripheral.identifier.uuidString,
                advertisement: Advertisement(name: name, serviceUUIDs: advertised, manufacturerData: manufacturer, rssi: rssi))
        }
        for (_, scan) in scans {
            if let services = scan.services, !services.contains(where: advertised.contains) { continue }
            scan.continuation.yield(device(named: scan.advertisedNamesOnly ? localName : localName ?? peripheral.name))
        }
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        guard let attempt = attempts.removeValue(forKey: peripheral.identifier) else { return }
        attempt.continuation.resume(returning: .success(()))
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        guard let attempt = attempts.removeValue(forKey: peripheral.identifier) else { return }
        attempt.continuation.resume(returning: .failure(CoreBluetoothFailure.connectFailure(error, device: peripheral.identifier.uuidString)))
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        let identifier = peripheral.identifier
        if let attempt = attempts.removeValue(forKey: identifier) {
            // An attempt ended without didConnect (a cancel, or iOS at the edge of range).
            attempt.continuation.resume(returning: .failure(CoreBluetoothFailure.connectFailure(error, device: identifier.uuidString)))
        }
        sessions[identifier]?.linkDown(CoreBluetoothFailure.disconnectReason(error))
    }

    // MARK: - CBPeripheralDelegate (forwarded to the peripheral's session)

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        sessions[peripheral.identifier]?.didDiscoverServices(error)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        sessions[peripheral.identifier]?.didDiscoverCharacteristics(for: service, error)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        sessions[peripheral.identifier]?.didUpdateValue(for: characteristic, error)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        sessions[peripheral.identifier]?.didWriteValue(for: characteristic, error)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        sessions[peripheral.identifier]?.didUpdateNotificationState(for: characteristic, error)
    }

    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {
        sessions[peripheral.identifier]?.isReadyToSend()
    }

    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {
        sessions[peripheral.identifier]?.didModifyServices(invalidatedServices)
    }

    // MARK: - Scanning

    /// Runs the manager's scan for the union of the scans asked for (or stops it).
    func startScanning(_ manager: CBCentralManager) {
        guard manager.state == .poweredOn else { return }
        guard !scans.isEmpty else {
            if manager.isScanning { manager.stopScan() }
            return
        }
        let filters = scans.values.map(\.services)
        let union: [GATTUUID]? = filters.contains { $0 == nil } ? nil : Array(Set(filters.compactMap { $0 }.joined())).sorted()
        let duplicates = scans.values.contains { $0.allowDuplicates }
        manager.scanForPeripherals(
            withServices: union?.map { CBUUID(string: $0.description) },
            options: [CBCentralManagerScanOptionAllowDuplicatesKey: NSNumber(value: duplicates)])
    }
}

/// What a waiting task is answered with, once: by the callback that answers its wait or by the
/// wait's cancellation, whichever comes first; the other finds it answered and does nothing. The
/// cancellation answers without the bridge's queue (``CentralBridge/afterCancellation(_:)``
/// says why), so the callback's table may still hold an answered entry for a moment: whoever
/// takes entries in order skips those (``isAnswered``).
final class Answer<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value, Never>)
        /// Answered before the task's continuation was attached.
        case early(Value)
        case answered
    }

    private let state = Mutex(State.empty)

    /// Whether the task has its answer (or will have it when its continuation is attached).
    var isAnswered: Bool {
        state.withLock { state in
            if case .waiting = state { return false }
            if case .empty = state { return false }
            return true
        }
    }

    /// Gives the task's continuation; false when it was answered first (and is resumed now).
    func attach(_ continuation: CheckedContinuation<Value, Never>) -> Bool {
        let early: Value? = state.withLock { state in
            switch state {
            case .empty:
                state = .waiting(continuation)
                return nil
            case .early(let value):
                state = .answered
                return value
            case .waiting, .answered:
                preconditionFailure("a continuation attached twice")
            }
        }
        guard let early else { return true }
        continuation.resume(returning: early)
        return false
    }

    /// Answers the task, unless it was answered already. Resumes it outside the lock.
    func resume(returning value: Value) {
        let continuation: CheckedContinuation<Value, Never>? = state.withLock { state in
            switch state {
            case .empty:
                state = .early(value)
                return nil
            case .waiting(let continuation):
                state = .answered
                return continuation
            case .early, .answered:
                return nil
            }
        }
        continuation?.resume(returning: value)
    }
}
