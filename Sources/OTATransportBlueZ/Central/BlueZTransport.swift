#if os(Linux)
import Foundation
import OTACore
import Synchronization

/// A connected GATT link through BlueZ: the ``Transport`` a ``BlueZConnector`` opens.
///
/// - Writes with response are `GattCharacteristic1.WriteValue(value, {type: request})`; the device's
///   answer (or ATT error) comes back with the reply.
/// - Writes without response go through the socket of `AcquireWrite`, one datagram per write. A
///   write returns once the socket took the datagram; when it is full, the write waits for room
///   (`poll` on a dispatch queue of its own, never on the cooperative pool), so nothing is dropped. Where BlueZ offers no `AcquireWrite` for
///   a characteristic, `WriteValue(value, {type: command})` is used instead, one D-Bus call per
///   write (slower); ``writePaths`` and the ``link`` summary say which. When bluetoothd may spread
///   write commands over several ATT bearers (EATT), which reorders them, they go as write requests
///   instead, `WriteValue(value, {type: request})`, each waiting for the device's answer
///   (``WritePath/writeRequest(reason:)``, decided by the connector; docs/decisions/0020).
/// - Reads are `ReadValue`.
/// - Notifications are `StartNotify` and the characteristic's `PropertiesChanged(Value)` signals;
///   ending the stream sends `StopNotify`.
/// - The link is down when BlueZ reports `Device1.Connected = false` (or `Device1.Disconnected`),
///   removes the device, bluetoothd leaves the bus, the D-Bus connection is lost, or bluetoothd
///   closes an `AcquireWrite` socket. Then every notification stream finishes, waiting and later
///   calls fail with ``TransportError/Kind/disconnected(_:)``, and ``disconnections`` yields.
///
/// - Note: The transport owns its D-Bus connection and its sockets: ``disconnect()`` (or losing
///   the link) closes them. It is safe to use from any task.
/// - Note: Notifications are the characteristic's `Value` changes. BlueZ may also change the
///   cached `Value` when it is read with `ReadValue` (not checked against 5.66), which would show
///   the value read on the notification stream too; the update protocols here never read a
///   characteristic they subscribe to.
public final class BlueZTransport: Transport, NotificationPushing, Sendable {
    /// How writes without response to one characteristic travel.
    public enum WritePath: Sendable, Hashable, CustomStringConvertible {
        /// Through the socket of `AcquireWrite`, with the ATT MTU bluetoothd returned.
        case acquiredSocket(mtu: Int)
        /// Through `WriteValue(type: command)`, one D-Bus call per write, and why.
        case writeValueCommand(reason: String)
        /// As write requests, `WriteValue(type: request)`, each waiting for the device's answer
        /// before the next leaves, so that they arrive in order; and why (EATT).
        case writeRequest(reason: String)

        public var description: String {
            switch self {
            case .acquiredSocket(let mtu): "AcquireWrite socket (MTU \(mtu))"
            case .writeValueCommand(let reason): "WriteValue(command): \(reason)"
            case .writeRequest(let reason): "WriteValue(request), in order: \(reason)"
            }
        }

        /// The link summary's words for writes without response sent as write requests.
        static func orderedSummary(because reason: String) -> String {
            "writes without response sent as write requests, one at a time, so that they arrive in order (\(reason)); "
                + "set Channels = 1 in [GATT] of bluetoothd's main.conf and restart it to send write commands"
        }
    }

    /// What the link has carried so far.
    public struct Statistics: Sendable, Hashable {
        /// Writes without response sent through `AcquireWrite` sockets.
        public var socketWrites = 0
        /// Bytes sent through `AcquireWrite` sockets.
        public var socketBytes = 0
        /// How many times a socket was full and a write waited for room.
        public var socketWaits = 0
        /// The largest send buffer of the `AcquireWrite` sockets (`SO_SNDBUF` as the kernel
        /// settled it, see ``BlueZConnector/Configuration/acquiredSocketSendBuffer``): a write
        /// returns with less payload than this still waiting for bluetoothd. `nil` without a socket.
        public var socketQueueLimit: Int?
        /// The most a socket held unread right after a write (`SIOCOUTQ`: payload plus the
        /// kernel's overhead per datagram), at most ``socketQueueLimit`` plus one datagram.
        public var largestSocketQueue = 0
        /// Writes without response sent with `WriteValue(type: command)`.
        public var commandWrites = 0
        /// Writes without response sent as write requests to keep their order
        /// (``WritePath/writeRequest(reason:)``).
        public var orderedWrites = 0
        /// Writes with response.
        public var requestWrites = 0
        /// Notifications received.
        public var notifications = 0
        /// The most bytes of writes without response a write may leave unconfirmed by a delivery
        /// receipt (``BlueZConnector/Configuration/deliveryWindow``, raised to twice the largest
        /// write): progress runs at most this far ahead of the device. `nil` without receipts.
        public var deliveryWindow: Int?
        /// Delivery receipts answered.
        public var receipts = 0
        /// The app's own write requests whose answers confirmed writes as receipts do.
        public var requestReceipts = 0
        /// How many times a write waited for a receipt.
        public var receiptWaits = 0
        /// The most bytes of writes without response unconfirmed right after a write.
        public var largestUnconfirmed = 0
        /// Why receipts stopped during the link (a read of the receipt descriptor failed); `nil`
        /// while they work.
        public var receiptsStopped: String?

        /// Creates empty statistics.
        public init() {}
    }

    private struct Subscription {
        var id: UInt64
        var subscriber: NotificationSubscriber
    }

    /// Where delivery receipts are read, and how far writes may run ahead of them.
    struct ReceiptPlan: Sendable, Hashable {
        /// The Client Characteristic Configuration descriptor read as a receipt.
        var descriptorPath: DBusObjectPath
        /// The characteristic the descriptor belongs to.
        var characteristic: CharacteristicID
        /// The window, in bytes (``DeliveryReceipts/limit``).
        var limit: Int

        /// The link summary's words for it.
        var summary: String {
            "progress at most \(limit) bytes ahead of the device (receipts: reads of \(characteristic.characteristic)'s CCC descriptor behind the writes)"
        }
    }

    private struct State {
        /// The watchers of ``disconnections``, and why the link went down.
        var watchers = DisconnectionWatchers()
        var disconnectReason: DisconnectReason? { watchers.reason }
        /// The bookkeeping of delivery receipts; `nil` without them.
        var receipts: DeliveryReceipts?
        /// Writes waiting for a receipt, by id.
        var receiptWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Waits cancelled before they were registered.
        var cancelledWaits: Set<UInt64> = []
        var subscriptions: [CharacteristicID: Subscription] = [:]
        /// Characteristics with `StartNotify` done and no `StopNotify` since.
        var notifying: Set<CharacteristicID> = []
        var monitor: Task<Void, Never>?
        var nextID: UInt64 = 0
        var statistics = Statistics()
    }

    public let link: LinkParameters
    public let characteristics: [CharacteristicID: CharacteristicProperties]
    /// The device address, such as `00:AA:01:01:00:01`.
    public let address: String
    /// The adapter the link goes through, such as `hci0`.
    public let adapter: String
    /// BlueZ's object path for the device.
    public let devicePath: DBusObjectPath
    /// How writes without response travel, for every characteristic that allows them.
    public let writePaths: [CharacteristicID: WritePath]

    private let session: BlueZSession
    private let configuration: BlueZConnector.Configuration
    private let paths: [CharacteristicID: DBusObjectPath]
    private let identifiers: [DBusObjectPath: CharacteristicID]
    private let sockets: [CharacteristicID: BlueZWriteSocket]
    /// Device signals older than this serial predate the connection and are ignored.
    private let baselineSerial: UInt32
    private let notifyGate = SerialGate()
    private let state = Mutex(State())
    private let receiptPlan: ReceiptPlan?
    private let clock: any Clock<Duration>

    /// How writes without response travel, as the connector settled it characteristic by
    /// characteristic, and the link that results (the largest MTU a socket or BlueZ reported).
    struct Writes: Sendable {
        /// The `AcquireWrite` sockets, by characteristic.
        var sockets: [CharacteristicID: BlueZWriteSocket] = [:]
        /// Each writable characteristic's path: its socket, or `WriteValue(command)` and why.
        var paths: [CharacteristicID: WritePath] = [:]
        /// The negotiated link.
        var link: LinkParameters
        /// Where delivery receipts are read; `nil` without them.
        var receipts: ReceiptPlan?
    }

    /// The signal streams a transport watches, subscribed before connecting so that nothing is missed.
    struct Signals: Sendable {
        /// Everything BlueZ signals at or below the device's path.
        var device: AsyncStream<DBusMessage>
        /// `InterfacesRemoved` from BlueZ's object manager.
        var removed: AsyncStream<DBusMessage>
        /// bluetoothd leaving the bus.
        var owner: AsyncStream<DBusMessage>
    }

    init(
        session: BlueZSession,
        address: String,
        adapter: String,
        devicePath: DBusObjectPath,
        gatt: [CharacteristicID: BlueZObjectTree.Characteristic],
        writes: Writes,
        configuration: BlueZConnector.Configuration,
        signals: Signals,
        baselineSerial: UInt32,
        clock: any Clock<Duration> = RealTimeClock()
    ) {
        self.session = session
        self.address = address
        self.adapter = adapter
        self.devicePath = devicePath
        sockets = writes.sockets
        writePaths = writes.paths
        link = writes.link
        self.configuration = configuration
        self.baselineSerial = baselineSerial
        characteristics = gatt.mapValues(\.properties)
        paths = gatt.mapValues(\.path)
        identifiers = Dictionary(gatt.map { ($0.value.path, $0.key) }, uniquingKeysWith: { first, _ in first })
        receiptPlan = writes.receipts
        self.clock = clock
        if let plan = writes.receipts {
            state.withLock {
                $0.receipts = DeliveryReceipts(limit: plan.limit, largestWrite: writes.link.maximumWriteLength(for: .withoutResponse))
            }
        }

        let monitor = Task { [weak self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [weak self] in
                    for await signal in signals.device { self?.handle(deviceSignal: signal) }
                }
                group.addTask { [weak self] in
                    for await signal in signals.removed { self?.handle(removed: signal) }
                }
                group.addTask { [weak self] in
                    for await signal in signals.owner { self?.handle(ownerChanged: signal) }
                }
                // The first stream to end means the connection closed (or the transport did).
                await group.next()
                group.cancelAll()
            }
            self?.drop(DisconnectReason("the D-Bus connection to bluetoothd was lost"))
        }
        state.withLock { $0.monitor = monitor }
        for socket in sockets.values {
            socket.onHangUp { [weak self] error in
                guard case .disconnected(let reason) = error.kind else { return }
                self?.drop(reason)
            }
        }
    }

    deinit {
        let (monitor, open) = state.withLock { ($0.monitor, $0.disconnectReason == nil) }
        monitor?.cancel()
        if open {
            for socket in sockets.values { socket.close(failing: .disconnected(.closedByApp)) }
        }
    }

    /// What the link has carried so far.
    public var statistics: Statistics {
        var statistics = state.withLock { state in
            var statistics = state.statistics
            if let receipts = state.receipts {
                statistics.deliveryWindow = receipts.limit
                statistics.receipts = receipts.receipts
                statistics.requestReceipts = receipts.requestsAnswered
                statistics.largestUnconfirmed = receipts.largestUnconfirmed
                statistics.receiptsStopped = receipts.stopped
            }
            return statistics
        }
        for socket in sockets.values {
            let carried = socket.statistics
            statistics.socketWrites += carried.datagrams
            statistics.socketBytes += carried.bytes
            statistics.socketWaits += carried.waits
            if let limit = carried.queueLimit { statistics.socketQueueLimit = max(statistics.socketQueueLimit ?? 0, limit) }
            statistics.largestSocketQueue = max(statistics.largestSocketQueue, carried.largestQueue)
        }
        return statistics
    }

    /// Whether the link is up.
    public var isConnected: Bool { state.withLock { $0.disconnectReason == nil } }

    // MARK: - Transport

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        try requireWritable(value, to: characteristic, kind: kind)
        try checkConnected()
        switch kind {
        case .withoutResponse:
            if let socket = sockets[characteristic] {
                try await waitForReceipts(admitting: value.count)
                do {
                    try await socket.write(value)
                } catch {
                    throw linkError(error)
                }
                recordCommand(value.count)
            } else if case .writeRequest = writePaths[characteristic] {
                do {
                    try await writeValue(value, to: characteristic, type: "request")
                } catch {
                    throw Self.orderedWriteFailure(error, to: characteristic)
                }
                state.withLock { $0.statistics.orderedWrites += 1 }
            } else {
                try await waitForReceipts(admitting: value.count)
                try await writeValue(value, to: characteristic, type: "command")
                state.withLock { $0.statistics.commandWrites += 1 }
                recordCommand(value.count)
            }
        case .withResponse:
            // The request travels behind every write command bluetoothd holds: its answer is a
            // delivery receipt for them (DeliveryReceipts.requestAnswered).
            let before = receiptPlan == nil ? nil : state.withLock { $0.receipts?.written }
            let unread = before == nil ? 0 : sockets.values.reduce(0) { $0 + $1.unreadBytes }
            try await writeValue(value, to: characteristic, type: "request")
            let wake = state.withLock { state -> Bool in
                state.statistics.requestWrites += 1
                guard let before, state.receipts != nil else { return false }
                state.receipts?.requestAnswered(upTo: before, unread: unread)
                return !state.receiptWaiters.isEmpty
            }
            if wake { wakeReceiptWaiters() }
        }
    }

    public func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        try requireCharacteristic(characteristic, allowing: .read)
        try checkConnected()
        let reply = try await call(
            characteristic, "ReadValue", [.variantDictionary([:])], doing: "reading \(characteristic.characteristic)")
        guard let bytes = reply.arguments.first?.bytes, reply.arguments.count == 1 else {
            throw TransportError(
                .other, "reading \(characteristic.characteristic): unexpected reply (\(reply.signature))")
        }
        return Data(bytes)
    }

    public func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        try await NotificationSubscriber.stream { (subscriber) throws(TransportError) in try await subscribe(to: characteristic, subscriber) }
    }

    /// Notifications handed to `receiver` on the D-Bus connection's thread as bluetoothd signals
    /// them (decision 0066): no stream, no task reading it.
    public func pushNotifications(
        from characteristic: CharacteristicID, to receiver: NotificationReceiver
    ) async throws(TransportError) -> NotificationSubscription {
        NotificationSubscription(cancel: try await subscribe(to: characteristic, .push(receiver)))
    }

    /// Makes `subscriber` the characteristic's one subscription (the one before it, if any,
    /// finishes), then enables notifications (`StartNotify`), ending the subscription if that
    /// fails; returns what ends it (`StopNotify` unless another subscription took its place).
    private func subscribe(
        to characteristic: CharacteristicID, _ subscriber: NotificationSubscriber
    ) async throws(TransportError)
        -> @Sendable () -> Void
    {
        // Indications reach the app the same way: bluetoothd confirms them.
        if characteristics[characteristic]?.contains(.indicate) != true {
            try requireCharacteristic(characteristic, allowing: .notify)
        }
        let (id, previous) = try state.withLock { state throws(TransportError) in
            if let reason = state.disconnectReason { throw TransportError.disconnected(reason) }
            state.nextID += 1
            let previous = state.subscriptions[characteristic]
            state.subscriptions[characteristic] = Subscription(id: state.nextID, subscriber: subscriber)
            return (state.nextID, previous)
        }
        previous?.subscriber.finish()
        do {
            try await notifyGate.run { () throws(TransportError) in try await startNotifying(characteristic) }
        } catch {
            subscriptionEnded(characteristic, id: id)
            throw error
        }
        return { [weak self] in self?.subscriptionEnded(characteristic, id: id) }
    }

    public var disconnections: AsyncStream<DisconnectReason> {
        state.withLock { $0.watchers.watch() }
    }

    /// Disconnects the device (`Device1.Disconnect`), closes the sockets and the D-Bus connection.
    /// Calling it on a closed link does nothing.
    public func disconnect() async {
        guard drop(.closedByApp, closeSession: false) else { return }
        await session.callDetached(
            devicePath, BlueZ.Interface.device, "Disconnect", timeout: configuration.disconnectTimeout)
        if configuration.pairing.removesBondAfterwards {
            // Forgets the device and its keys (BlueZ removes its object too); a later connect finds it again.
            let adapterPath = DBusObjectPath("/org/bluez/\(adapter)") ?? BlueZ.agentManagerPath
            await session.callDetached(
                adapterPath, BlueZ.Interface.adapter, "RemoveDevice", [.objectPath(devicePath)],
                timeout: configuration.disconnectTimeout)
        }
        await session.close()
    }

    // MARK: - Calls

    private func checkConnected() throws(TransportError) {
        if let reason = state.withLock({ $0.disconnectReason }) { throw TransportError.disconnected(reason) }
    }

    /// The error to report for a failed call: the link's loss when it is down.
    private func linkError(_ error: TransportError) -> TransportError {
        if let reason = state.withLock({ $0.disconnectReason }) { return .disconnected(reason) }
        return error
    }

    private func call(
        _ characteristic: CharacteristicID,
        _ member: String,
        _ arguments: [DBusValue],
        doing operation: String
    ) async throws(TransportError) -> DBusMessage {
        guard let reply = try await call(characteristic, member, arguments, tolerating: [], doing: operation) else {
            throw TransportError(.other, "\(operation): no reply")
        }
        return reply
    }

    private func call(
        _ characteristic: CharacteristicID,
        _ member: String,
        _ arguments: [DBusValue],
        tolerating tolerated: Set<String>,
        doing operation: String
    ) async throws(TransportError) -> DBusMessage? {
        guard let path = paths[characteristic] else {
            throw TransportError(
                .unknownCharacteristic(characteristic), "device has no characteristic \(characteristic)")
        }
        do {
            return try await session.call(
                path, BlueZ.Interface.gattCharacteristic, member, arguments, timeout: configuration.callTimeout,
                tolerating: tolerated, session.context(operation, address: address))
        } catch {
            throw linkError(error)
        }
    }

    /// A write request sent in place of a write command failed: unless the link is gone, say
    /// why it was a request and how to send commands instead.
    static func orderedWriteFailure(_ error: TransportError, to characteristic: CharacteristicID) -> TransportError {
        if case .disconnected = error.kind { return error }
        return TransportError(
            error.kind,
            "\(error.message) (a write request sent in place of a write without response to \(characteristic.characteristic), "
                + "so that EATT cannot reorder the data; if the device takes no write requests there, set Channels = 1 in [GATT] "
                + "of bluetoothd's main.conf and restart it, or pass --write-path acquire to send write commands)")
    }

    private func writeValue(
        _ value: Data, to characteristic: CharacteristicID, type: String
    )
        async throws(TransportError)
    {
        let kind = type == "request" ? "write with response" : "write without response"
        _ = try await call(
            characteristic, "WriteValue", [.bytes(value), .variantDictionary(["type": .string(type)])],
            doing: "\(kind) to \(characteristic.characteristic)")
    }

    // MARK: - Delivery receipts

    /// Waits until ``DeliveryReceipts`` admits a write of `count` bytes: until a receipt shows
    /// enough of the earlier writes reached the device, receipts stop, or the link drops.
    private func waitForReceipts(admitting count: Int) async throws(TransportError) {
        guard receiptPlan != nil else { return }
        while true {
            try checkConnected()
            if Task.isCancelled {
                throw TransportError(.other, "cancelled while waiting for the device to receive earlier writes")
            }
            let id: UInt64? = state.withLock { state in
                guard let receipts = state.receipts, !receipts.admits(count) else { return nil }
                state.nextID += 1
                state.statistics.receiptWaits += 1
                return state.nextID
            }
            guard let id else { return }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state in
                        if state.cancelledWaits.remove(id) != nil || state.disconnectReason != nil
                            || state.receipts?.admits(count) != false
                        {
                            return true
                        }
                        state.receiptWaiters[id] = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    if let waiter = state.receiptWaiters.removeValue(forKey: id) { return waiter }
                    state.cancelledWaits.insert(id)
                    return nil
                }
                waiter?.resume()
            }
        }
    }

    /// Records a write command bluetoothd took, and sends a receipt when the bookkeeping asks.
    private func recordCommand(_ count: Int) {
        guard receiptPlan != nil else { return }
        let action = state.withLock { $0.receipts?.wrote(count) } ?? DeliveryReceipts.Action.none
        perform(action)
    }

    private func perform(_ action: DeliveryReceipts.Action) {
        switch action {
        case .none: return
        case .sendReceipt: Task { await self.sendReceipt(afterPause: false) }
        case .sendReceiptAfterPause: Task { await self.sendReceipt(afterPause: true) }
        }
    }

    /// How long to wait before a receipt that follows one which confirmed nothing new (bluetoothd
    /// had not read the socket yet): one short connection interval.
    static let receiptPause: Duration = .milliseconds(10)

    /// Reads the receipt descriptor, then lets waiting writes re-check.
    private func sendReceipt(afterPause: Bool) async {
        guard let plan = receiptPlan else { return }
        if afterPause { try? await clock.sleep(for: Self.receiptPause) }
        // What was written before looking at the sockets: of that, what they still hold goes on
        // the air after the receipt.
        let written = state.withLock { $0.disconnectReason == nil ? $0.receipts?.written : nil }
        guard let written else { return wakeReceiptWaiters() }
        let unread = sockets.values.reduce(0) { $0 + $1.unreadBytes }
        state.withLock { $0.receipts?.sending(upTo: written, unread: unread) }
        var action = DeliveryReceipts.Action.none
        do {
            _ = try await session.call(
                plan.descriptorPath, BlueZ.Interface.gattDescriptor, "ReadValue", [.variantDictionary([:])],
                timeout: configuration.callTimeout,
                session.context("reading a delivery receipt (\(plan.characteristic.characteristic)'s CCC descriptor)", address: address))
            action = state.withLock { $0.receipts?.receiptArrived() } ?? .none
        } catch {
            // A lost link fails the read too; then the waiting writes see the loss.
            state.withLock { state in
                if state.disconnectReason == nil { state.receipts?.failed(error.message) }
            }
        }
        wakeReceiptWaiters()
        perform(action)
    }

    private func wakeReceiptWaiters() {
        let waiters = state.withLock { state in
            defer { state.receiptWaiters = [:] }
            return Array(state.receiptWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: - Notifications

    /// Sends `StartNotify` unless notifications are already on. Runs inside ``notifyGate``.
    private func startNotifying(_ characteristic: CharacteristicID) async throws(TransportError) {
        let needed = try state.withLock { state throws(TransportError) in
            if let reason = state.disconnectReason { throw TransportError.disconnected(reason) }
            return !state.notifying.contains(characteristic)
        }
        guard needed else { return }
        // bluetoothd answers InProgress when this client already asked.
        _ = try await call(
            characteristic, "StartNotify", [], tolerating: ["org.bluez.Error.InProgress"],
            doing: "enabling notifications of \(characteristic.characteristic)")
        let orphaned = state.withLock { state in
            state.notifying.insert(characteristic)
            return state.subscriptions[characteristic] == nil && state.disconnectReason == nil
        }
        if orphaned { await stopNotifying(characteristic) }
    }

    /// Sends `StopNotify` when nobody listens any more. Runs inside ``notifyGate``.
    private func stopNotifying(_ characteristic: CharacteristicID) async {
        let needed = state.withLock { state in
            guard state.subscriptions[characteristic] == nil, state.disconnectReason == nil,
                state.notifying.remove(characteristic) != nil
            else { return false }
            return true
        }
        guard needed else { return }
        _ = try? await call(
            characteristic, "StopNotify", [], doing: "disabling notifications of \(characteristic.characteristic)")
    }

    private func subscriptionEnded(_ characteristic: CharacteristicID, id: UInt64) {
        let wasCurrent = state.withLock { state in
            guard state.subscriptions[characteristic]?.id == id else { return false }
            state.subscriptions[characteristic] = nil
            return state.disconnectReason == nil
        }
        guard wasCurrent else { return }
        // onTermination cannot wait; the gate keeps StopNotify in order with a new StartNotify.
        Task { [self] in
            try? await notifyGate.run { () async throws(TransportError) in await stopNotifying(characteristic) }
        }
    }

    private func deliver(_ value: Data, from path: DBusObjectPath) {
        guard let characteristic = identifiers[path] else { return }
        let subscriber = state.withLock { state in
            guard let subscription = state.subscriptions[characteristic] else { return nil as NotificationSubscriber? }
            state.statistics.notifications += 1
            return subscription.subscriber
        }
        subscriber?.deliver(value)
    }

    // MARK: - Link loss

    private func handle(deviceSignal signal: DBusMessage) {
        if let (interface, changed, _) = BlueZSignals.changed(signal) {
            if interface == BlueZ.Interface.gattCharacteristic, let path = signal.path,
                let value = changed["Value"]?.bytes
            {
                deliver(Data(value), from: path)
            } else if interface == BlueZ.Interface.device, signal.path == devicePath,
                changed["Connected"]?.bool == false,
                signal.serial == 0 || signal.serial > baselineSerial
            {
                drop(DisconnectReason("\(address) disconnected\(pairingHint)"))
            }
        } else if signal.interface == BlueZ.Interface.device, signal.member == "Disconnected", signal.path == devicePath {
            // BlueZ 5.72 and later: Disconnected(s reason, s message).
            let message = signal.arguments.count > 1 ? signal.arguments[1].string : nil
            let name = signal.arguments.first?.string
            drop(DisconnectReason("\(address) disconnected: \(message ?? name ?? "no reason given")"))
        }
    }

    /// What to add when the device drops the link before it took any data: a device whose
    /// characteristics need an encrypted link does that when bluetoothd's security raise fails
    /// (no agent, or pairing refused), and BlueZ 5.66 says nothing more on D-Bus.
    private var pairingHint: String {
        guard !configuration.pairing.pairsFirst, configuration.pairing.passkey == nil else { return "" }
        let sent = state.withLock { $0.statistics.commandWrites + $0.statistics.orderedWrites }
        guard sent == 0, sockets.values.allSatisfy({ $0.statistics.datagrams == 0 }) else { return "" }
        return " before taking any data; if it needs a paired link, pass --pairing first (or --passkey NNNNNN)"
    }

    private func handle(removed signal: DBusMessage) {
        guard let (path, interfaces) = BlueZSignals.removed(signal), interfaces.contains(BlueZ.Interface.device) else {
            return
        }
        if path == devicePath { drop(DisconnectReason("BlueZ removed \(address)")) }
    }

    private func handle(ownerChanged signal: DBusMessage) {
        guard let (name, _, newOwner) = try? signal.decode(String.self, String.self, String.self) else { return }
        if name == BlueZ.serviceName, newOwner.isEmpty {
            drop(DisconnectReason("bluetoothd stopped (org.bluez left the bus)"))
        }
    }

    /// Marks the link down: finishes the streams, fails the sockets' writes, closes the D-Bus
    /// connection (unless `closeSession` is false). Returns whether this call brought it down.
    @discardableResult
    private func drop(_ reason: DisconnectReason, closeSession: Bool = true) -> Bool {
        let taken = state.withLock { state -> (DisconnectionWatchers.Notice, [Subscription], Task<Void, Never>?)? in
            guard let notice = state.watchers.markDown(reason) else { return nil }
            defer {
                state.subscriptions = [:]
                state.monitor = nil
                state.notifying = []
            }
            return (notice, Array(state.subscriptions.values), state.monitor)
        }
        guard let (notice, subscriptions, monitor) = taken else { return false }
        wakeReceiptWaiters()
        for socket in sockets.values { socket.close(failing: .disconnected(reason)) }
        for subscription in subscriptions { subscription.subscriber.finish() }
        notice.deliver()
        monitor?.cancel()
        if closeSession {
            // Pending calls then fail at once, and are reported as the link's loss.
            let session = session
            Task { await session.close() }
        }
        return true
    }
}
#endif
