import Foundation
import OTACore

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothStandIn
#endif

/// One connected peripheral over CoreBluetooth: the ``Transport`` the engine uses.
///
/// - Writes without response honour `canSendWriteWithoutResponse`: while it reads false the
///   write waits for `peripheralIsReady(toSendWriteWithoutResponse:)`, checking the flag again
///   after ``CoreBluetoothTimeouts/readyFallback`` in case the callback never comes. The first
///   write of a connection goes without looking (the flag often reads false before it). No
///   chunk is ever written while the flag is false, so CoreBluetooth never drops one.
/// - Writes with response complete on `peripheral(_:didWriteValueFor:error:)`, reads on
///   `peripheral(_:didUpdateValueFor:error:)`, in order per characteristic.
/// - `didModifyServices` (Service Changed) rediscovers the dead services; operations wait for it
///   instead of using stale characteristics.
/// - ``link`` takes its lengths from `maximumWriteValueLength(for: .withoutResponse)` after
///   discovery (ATT MTU − 3); writes with response are held to the same length, not iOS's 512
///   (see docs/decisions/0018-corebluetooth-transport.md).
public final class CoreBluetoothTransport: Transport, NotificationPushing, ImmediateWriting, @unchecked Sendable {
    // @unchecked: every mutable field is confined to the bridge's queue.

    typealias Resume<T: Sendable> = CentralBridge.Resume<T>

    let bridge: CentralBridge
    let peripheral: CBPeripheral
    let identifier: UUID
    let timeouts: CoreBluetoothTimeouts

    /// The watchers of ``disconnections``, and why the link went down.
    private var watchers = DisconnectionWatchers()
    private var down: DisconnectReason? { watchers.reason }
    private var closing = false
    private var table: [CharacteristicID: CBCharacteristic] = [:]
    private var discoveredTable: [CharacteristicID: CharacteristicProperties] = [:]
    private var linkParameters = LinkParameters(attMTU: 23, maximumWriteWithoutResponse: 20, maximumWriteWithResponse: 20)
    private var discoveryPending: Set<ObjectIdentifier> = []
    private var discovering = false
    private var discoveryWaiters: [UInt64: Resume<Void>] = [:]
    private var rediscoveries = 0
    private var writes: [CharacteristicID: [(id: UInt64, continuation: Resume<Void>)]] = [:]
    private var reads: [CharacteristicID: [(id: UInt64, continuation: Resume<Data>)]] = [:]
    private var notifyChanges: [CharacteristicID: [(id: UInt64, continuation: Resume<Void>)]] = [:]
    // Not private: a test delivers into a subscription from the queue, as a callback does.
    var subscriptions: [CharacteristicID: (id: UInt64, subscriber: NotificationSubscriber)] = [:]
    private var readyWaiters: [UInt64: Resume<Void>] = [:]
    private var closeWaiters: [UInt64: Resume<Void>] = [:]
    private var sentWithoutResponse = false
    private var pausedWrites = 0

    init(bridge: CentralBridge, peripheral: CBPeripheral, timeouts: CoreBluetoothTimeouts) {
        self.bridge = bridge
        self.peripheral = peripheral
        self.identifier = peripheral.identifier
        self.timeouts = timeouts
    }

    // MARK: - Transport

    public var link: LinkParameters { bridge.onQueue { linkParameters } }

    public var characteristics: [CharacteristicID: CharacteristicProperties] { bridge.onQueue { discoveredTable } }

    /// How many times Service Changed made the transport discover services again.
    public var rediscoveryCount: Int { bridge.onQueue { rediscoveries } }

    /// How many times a write without response had to wait for the ready signal.
    public var writerPauses: Int { bridge.onQueue { pausedWrites } }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        try requireWritable(value, to: characteristic, kind: kind)
        switch kind {
        case .withResponse:
            try await withCurrentCharacteristic(characteristic) { () async -> Result<Void, TransportError> in
                await bridge.suspend { id, continuation in
                    guard let target = usable(characteristic, continuation) else { return nil }
                    writes[characteristic, default: []].append((id, continuation))
                    peripheral.writeValue(value, for: target, type: .withResponse)
                    return nil
                } withdraw: { [self] id in
                    take(id, from: &writes[characteristic])
                }
            }
        case .withoutResponse:
            try await writeWithoutResponse(value, to: characteristic)
        }
    }

    private enum SendOutcome {
        case sent
        case mustWait
        case rediscovering
    }

    /// Sends a write without response at once when CoreBluetooth can take it
    /// (`canSendWriteWithoutResponse`, or the connection's first write); `false`, having sent
    /// nothing, when it must wait for `peripheralIsReady` or for services being discovered again
    /// (``write(_:to:kind:)`` then waits).
    public func writeWithoutResponseIfReady(_ value: Data, to characteristic: CharacteristicID) throws(TransportError) -> Bool {
        try requireWritable(value, to: characteristic, kind: .withoutResponse)
        return try send(value, to: characteristic) == .sent
    }

    /// One attempt to send a write without response, on the bridge's queue.
    private func send(_ value: Data, to characteristic: CharacteristicID) throws(TransportError) -> SendOutcome {
        try bridge.onQueue { () throws(TransportError) in
            if let down { throw TransportError.disconnected(down) }
            if discovering { return .rediscovering }
            guard let target = table[characteristic] else {
                throw TransportError(.unknownCharacteristic(characteristic), "device no longer has characteristic \(characteristic)")
            }
            // The flag often reads false before the first write of a connection.
            guard peripheral.canSendWriteWithoutResponse || !sentWithoutResponse else { return .mustWait }
            sentWithoutResponse = true
            peripheral.writeValue(value, for: target, type: .withoutResponse)
            return .sent
        }
    }

    private func writeWithoutResponse(_ value: Data, to characteristic: CharacteristicID) async throws(TransportError) {
        while true {
            switch try send(value, to: characteristic) {
            case .sent: return
            case .rediscovering: try await waitForDiscovery()
            case .mustWait: try await waitUntilReady()
            }
        }
    }

    /// Waits for `peripheralIsReady` — a hint to check the flag again, not a count — or for the
    /// fallback delay when the callback does not come.
    private func waitUntilReady() async throws(TransportError) {
        let bridge = self.bridge
        do {
            _ = try await withTimeout(timeouts.readyFallback, clock: bridge.clock, timeoutError: OTAError(.timeout, "")) { [self] in
                try await bridge.suspend { [self] id, continuation in
                    pausedWrites += 1
                    readyWaiters[id] = continuation
                    return nil
                } withdraw: { [self] id in
                    readyWaiters.removeValue(forKey: id)
                }.get()
            }
        } catch let error as TransportError {
            throw error
        } catch {
            if Task.isCancelled { throw CoreBluetoothFailure.cancelled }
            // The fallback delay passed: check the flag again.
        }
    }

    public func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        try requireCharacteristic(characteristic, allowing: .read)
        return try await withCurrentCharacteristic(characteristic) { () async -> Result<Data, TransportError> in
            await bridge.suspend { id, continuation in
                guard let target = usable(characteristic, continuation) else { return nil }
                reads[characteristic, default: []].append((id, continuation))
                peripheral.readValue(for: target)
                return nil
            } withdraw: { [self] id in
                take(id, from: &reads[characteristic])
            }
        }
    }

    public func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        try await NotificationSubscriber.stream { (subscriber) throws(TransportError) in try await subscribe(to: characteristic, subscriber) }
    }

    /// Notifications handed to `receiver` on the bridge's queue as CoreBluetooth reports them
    /// (decision 0066): no stream, no task reading it.
    public func pushNotifications(
        from characteristic: CharacteristicID, to receiver: NotificationReceiver
    ) async throws(TransportError) -> NotificationSubscription {
        NotificationSubscription(cancel: try await subscribe(to: characteristic, .push(receiver)))
    }

    /// Makes `subscriber` the characteristic's one subscription (the one before it, if any,
    /// finishes) and switches notifications on, ending the subscription if that fails; returns
    /// what ends it (notifications switched off unless another subscription took its place).
    private func subscribe(
        to characteristic: CharacteristicID, _ subscriber: NotificationSubscriber
    ) async throws(TransportError) -> @Sendable () -> Void {
        if characteristics[characteristic]?.contains(.indicate) != true {
            try requireCharacteristic(characteristic, allowing: .notify)
        }
        let bridge = self.bridge
        let (token, previous): (UInt64, NotificationSubscriber?) = try bridge.onQueue { () throws(TransportError) in
            if let down { throw TransportError.disconnected(down) }
            let token = bridge.makeID()
            let previous = subscriptions[characteristic]?.subscriber
            subscriptions[characteristic] = (token, subscriber)
            return (token, previous)
        }
        // Run by a cancelled stream's consumer (its `onTermination`): must not wait for the queue.
        let end: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            bridge.afterCancellation { [self] in
                guard subscriptions[characteristic]?.id == token else { return }
                subscriptions[characteristic] = nil
                if down == nil, let target = table[characteristic], target.isNotifying {
                    peripheral.setNotifyValue(false, for: target)
                }
            }
        }
        previous?.finish()
        do throws(TransportError) {
            try await withCurrentCharacteristic(characteristic) { () async -> Result<Void, TransportError> in
                await bridge.suspend { id, continuation in
                    guard let target = usable(characteristic, continuation) else { return nil }
                    notifyChanges[characteristic, default: []].append((id, continuation))
                    peripheral.setNotifyValue(true, for: target)
                    return nil
                } withdraw: { [self] id in
                    take(id, from: &notifyChanges[characteristic])
                }
            }
        } catch {
            end()
            throw error
        }
        return end
    }

    public var disconnections: AsyncStream<DisconnectReason> {
        bridge.onQueue { watchers.watch() }
    }

    public func disconnect() async {
        let bridge = self.bridge
        let cancel: Bool = bridge.onQueue {
            guard !closing, bridge.sessions[identifier] === self else { return false }
            closing = true
            fail(.closedByApp)
            return self.peripheral.state == .connected || self.peripheral.state == .connecting
        }
        guard cancel else { return }
        let peripheral = Unchecked(self.peripheral)
        // Wait for CoreBluetooth to confirm, so that a reconnection does not find the
        // peripheral still disconnecting.
        _ = try? await withTimeout(timeouts.disconnect, clock: bridge.clock, timeoutError: OTAError(.timeout, "")) { [self] in
            await bridge.suspend { [self] id, continuation in
                closeWaiters[id] = continuation
                bridge.manager.cancelPeripheralConnection(peripheral.value)
                return nil
            } withdraw: { [self] id in
                closeWaiters.removeValue(forKey: id)
            }
        }
        bridge.onQueue { if bridge.sessions[identifier] === self { bridge.sessions[identifier] = nil } }
    }

    // MARK: - Helpers (on the queue unless noted)

    /// The characteristic to use now, or `nil` after answering `continuation` (link down,
    /// characteristic gone).
    private func usable<T>(_ id: CharacteristicID, _ continuation: Resume<T>) -> CBCharacteristic? {
        if let down {
            continuation.resume(returning: .failure(.disconnected(down)))
            return nil
        }
        guard let target = table[id] else {
            continuation.resume(returning: .failure(TransportError(.unknownCharacteristic(id), "device no longer has characteristic \(id)")))
            return nil
        }
        return target
    }

    private func take<T>(_ id: UInt64, from list: inout [(id: UInt64, continuation: Resume<T>)]?) -> Resume<T>? {
        guard let index = list?.firstIndex(where: { $0.id == id }) else { return nil }
        return list?.remove(at: index).continuation
    }

    /// Runs `operation` once no rediscovery is under way (not on the queue).
    private func withCurrentCharacteristic<T: Sendable>(
        _ id: CharacteristicID, _ operation: () async -> Result<T, TransportError>
    ) async throws(TransportError) -> T {
        while bridge.onQueue({ discovering && down == nil }) {
            try await waitForDiscovery()
        }
        return try await operation().get()
    }

    private func key(of characteristic: CBCharacteristic) -> CharacteristicID? {
        guard let service = characteristic.service, let serviceUUID = GATTUUID(service.uuid.uuidString),
            let uuid = GATTUUID(characteristic.uuid.uuidString)
        else { return nil }
        return CharacteristicID(service: serviceUUID, characteristic: uuid)
    }

    // MARK: - Discovery

    /// Discovers every service and characteristic, then reads the lengths iOS negotiated (not on
    /// the queue).
    func discover() async throws(TransportError) {
        bridge.onQueue { startDiscovery(nil) }
        do {
            try await withTimeout(timeouts.discovery, clock: bridge.clock, timeoutError: OTAError(.timeout, "")) { [self] in
                try await waitForDiscovery()
            }
        } catch let error as TransportError {
            throw error
        } catch {
            if Task.isCancelled { throw CoreBluetoothFailure.cancelled }
            throw TransportError(.connectionFailed, "\(identifier.uuidString) did not list its services within \(timeouts.discovery.humanReadable)")
        }
        bridge.onQueue {
            let withoutResponse = peripheral.maximumWriteValueLength(for: .withoutResponse)
            linkParameters = LinkParameters(
                attMTU: withoutResponse + 3, maximumWriteWithoutResponse: withoutResponse,
                maximumWriteWithResponse: min(withoutResponse, peripheral.maximumWriteValueLength(for: .withResponse)),
                summary: "CoreBluetooth, ATT MTU negotiated by the system")
            discoveredTable = table.mapValues { CharacteristicProperties(rawValue: UInt8(truncatingIfNeeded: $0.properties.rawValue)) }
        }
    }

    private func waitForDiscovery() async throws(TransportError) {
        try await bridge.suspend { id, continuation in
            if let down { return .failure(.disconnected(down)) }
            if !discovering { return .success(()) }
            discoveryWaiters[id] = continuation
            return nil
        } withdraw: { [self] id in
            discoveryWaiters.removeValue(forKey: id)
        }.get()
    }

    private func startDiscovery(_ services: [CBUUID]?) {
        discovering = true
        discoveryPending = []
        peripheral.discoverServices(services)
    }

    private func finishDiscovery(_ result: Result<Void, TransportError>) {
        discovering = false
        let waiters = discoveryWaiters
        discoveryWaiters.removeAll()
        for (_, waiter) in waiters { waiter.resume(returning: result) }
        // Subscriptions on rediscovered characteristics are switched on again.
        guard case .success = result else { return }
        for id in subscriptions.keys {
            if let target = table[id], !target.isNotifying { peripheral.setNotifyValue(true, for: target) }
        }
    }

    func didDiscoverServices(_ error: (any Error)?) {
        guard discovering, down == nil else { return }
        if let error {
            finishDiscovery(.failure(TransportError(.connectionFailed, "service discovery failed (\(CoreBluetoothFailure.code(of: error)))")))
            return
        }
        let known = Set(table.values.compactMap { $0.service.map(ObjectIdentifier.init) })
        let fresh = (peripheral.services ?? []).filter { !known.contains(ObjectIdentifier($0)) }
        guard !fresh.isEmpty else { return finishDiscovery(.success(())) }
        for service in fresh {
            discoveryPending.insert(ObjectIdentifier(service))
            peripheral.discoverCharacteristics(nil, for: service)
        }
    }

    func didDiscoverCharacteristics(for service: CBService, _ error: (any Error)?) {
        guard discovering, down == nil, discoveryPending.remove(ObjectIdentifier(service)) != nil else { return }
        if error == nil {
            for characteristic in service.characteristics ?? [] {
                if let id = key(of: characteristic) { table[id] = characteristic }
            }
        }
        if discoveryPending.isEmpty { finishDiscovery(.success(())) }
    }

    func didModifyServices(_ invalidated: [CBService]) {
        guard down == nil else { return }
        let dead = Set(invalidated.map(ObjectIdentifier.init))
        table = table.filter { entry in !(entry.value.service.map { dead.contains(ObjectIdentifier($0)) } ?? true) }
        rediscoveries += 1
        startDiscovery(invalidated.map(\.uuid))
    }

    // MARK: - Callbacks (on the queue)

    func didUpdateValue(for characteristic: CBCharacteristic, _ error: (any Error)?) {
        guard let id = key(of: characteristic) else { return }
        if let read = takeOldest(id, from: &reads) {
            read.resume(returning: Self.outcome(of: "read", on: id, error, characteristic.value ?? Data()))
            return
        }
        guard error == nil, let value = characteristic.value else { return }
        subscriptions[id]?.subscriber.deliver(value)
    }

    func didWriteValue(for characteristic: CBCharacteristic, _ error: (any Error)?) {
        guard let id = key(of: characteristic), let write = takeOldest(id, from: &writes) else { return }
        write.resume(returning: Self.outcome(of: "write", on: id, error, ()))
    }

    func didUpdateNotificationState(for characteristic: CBCharacteristic, _ error: (any Error)?) {
        guard let id = key(of: characteristic), let change = takeOldest(id, from: &notifyChanges) else { return }
        change.resume(returning: Self.outcome(of: "notification change", on: id, error, ()))
    }

    /// The oldest operation on `id` still waiting for its callback, taken from `pending`.
    private func takeOldest<T>(_ id: CharacteristicID, from pending: inout [CharacteristicID: [(id: UInt64, continuation: Resume<T>)]]) -> Resume<T>? {
        // Skips answers their wait's cancellation already gave (not yet withdrawn).
        while let oldest = pending[id]?.first?.continuation {
            pending[id]?.removeFirst()
            if !oldest.isAnswered { return oldest }
        }
        return nil
    }

    /// What a callback for `operation` on `id` came to: `value`, or the failure `error` says.
    private static func outcome<T>(
        of operation: String, on id: CharacteristicID, _ error: (any Error)?, _ value: @autoclosure () -> T
    ) -> Result<T, TransportError> {
        if let error { return .failure(CoreBluetoothFailure.operationFailure(error, operation, id)) }
        return .success(value())
    }

    func isReadyToSend() {
        let waiters = readyWaiters
        readyWaiters.removeAll()
        for (_, waiter) in waiters { waiter.resume(returning: .success(())) }
    }

    /// The link is gone (`didDisconnectPeripheral`, or Bluetooth off).
    func linkDown(_ reason: DisconnectReason) {
        fail(reason)
        let waiters = closeWaiters
        closeWaiters.removeAll()
        for (_, waiter) in waiters { waiter.resume(returning: .success(())) }
        if bridge.sessions[identifier] === self { bridge.sessions[identifier] = nil }
    }

    /// Fails everything outstanding with `reason`: no callback comes after a disconnect.
    func fail(_ reason: DisconnectReason) {
        guard let notice = watchers.markDown(reason) else { return }
        let error = TransportError.disconnected(reason)
        let pendingWrites = writes.values.joined().map(\.continuation)
        let pendingReads = reads.values.joined().map(\.continuation)
        let pendingNotify = notifyChanges.values.joined().map(\.continuation)
        let others = Array(readyWaiters.values) + Array(discoveryWaiters.values)
        let subscribers = subscriptions.values.map(\.subscriber)
        writes.removeAll()
        reads.removeAll()
        notifyChanges.removeAll()
        readyWaiters.removeAll()
        discoveryWaiters.removeAll()
        subscriptions.removeAll()
        for continuation in pendingWrites { continuation.resume(returning: .failure(error)) }
        for continuation in pendingReads { continuation.resume(returning: .failure(error)) }
        for continuation in pendingNotify { continuation.resume(returning: .failure(error)) }
        for continuation in others { continuation.resume(returning: .failure(error)) }
        for subscriber in subscribers { subscriber.finish() }
        notice.deliver()
    }
}
