#if os(Linux)
import Foundation
import OTACore

/// LE discovery through BlueZ, as a stream of what is heard.
///
/// ```swift
/// let scanner = BlueZScanner(adapter: "hci0", filter: .init(serviceUUIDs: [GATTUUID("FE59")!]))
/// for try await discovery in try await scanner.discoveries() {
///     print(discovery.address, discovery.advertisement.name ?? "-", discovery.advertisement.rssi ?? 0)
/// }
/// ```
///
/// ``discoveries()`` sets the adapter's discovery filter (`Transport: le`, the service UUIDs, the
/// pattern), starts discovery, and yields a ``Discovery`` each time BlueZ reports a device that
/// passes the filter: devices already heard (with an `RSSI`) first, then new devices
/// (`InterfacesAdded`) and new advertisements of known ones (`PropertiesChanged`). A device shows
/// up many times, once per update; keep the latest by ``Discovery/address``.
///
/// - Important: The stream runs until it is dropped or its consuming task is cancelled; then it
///   stops discovery (`StopDiscovery`) and closes its D-Bus connection. It finishes by throwing a
///   ``TransportError`` when the link to bluetoothd is lost.
public struct BlueZScanner: Sendable {
    /// Which devices to report.
    public struct Filter: Sendable, Hashable {
        /// Report only devices that advertise at least one of these services; empty for all.
        public var serviceUUIDs: [GATTUUID]
        /// Report only devices whose address or name starts with this text.
        public var pattern: String?
        /// Report every advertisement, even when its data did not change (BlueZ's `DuplicateData`).
        public var reportsDuplicates: Bool

        /// Creates a filter; the default reports every LE device.
        public init(serviceUUIDs: [GATTUUID] = [], pattern: String? = nil, reportsDuplicates: Bool = false) {
            self.serviceUUIDs = serviceUUIDs
            self.pattern = pattern
            self.reportsDuplicates = reportsDuplicates
        }

        /// Whether `device` passes the filter (BlueZ filters too, but not the devices it knew).
        public func accepts(_ device: BlueZObjectTree.Device) -> Bool {
            if !serviceUUIDs.isEmpty, !device.serviceUUIDs.contains(where: serviceUUIDs.contains) { return false }
            if let pattern, !pattern.isEmpty {
                let name = device.name ?? device.alias ?? ""
                return device.address.hasPrefix(pattern.uppercased()) || name.hasPrefix(pattern)
            }
            return true
        }

        /// The argument of `Adapter1.SetDiscoveryFilter`.
        var discoveryFilter: [String: DBusValue] {
            var filter: [String: DBusValue] = ["Transport": .string("le")]
            if !serviceUUIDs.isEmpty { filter["UUIDs"] = .strings(serviceUUIDs.map(\.description)) }
            if let pattern, !pattern.isEmpty { filter["Pattern"] = .string(pattern) }
            if reportsDuplicates { filter["DuplicateData"] = .bool(true) }
            return filter
        }
    }

    /// One report of a device heard during discovery.
    public struct Discovery: Sendable, Hashable {
        /// The device address, upper case, such as `00:AA:01:01:00:01`.
        public var address: String
        /// `public` or `random`, when BlueZ says.
        public var addressType: String?
        /// The adapter that heard it, such as `hci0`.
        public var adapter: String
        /// What it advertises: name, services, manufacturer data, RSSI.
        public var advertisement: Advertisement
        /// Whether it is connected (to this host).
        public var isConnected: Bool
        /// BlueZ's object path for the device.
        public var path: DBusObjectPath

        /// Creates a report from a BlueZ device.
        public init(device: BlueZObjectTree.Device, adapter: String) {
            address = device.address
            addressType = device.addressType
            self.adapter = adapter
            advertisement = device.advertisement
            isConnected = device.isConnected
            path = device.path
        }
    }

    /// The adapter to scan with (`hci0`, or its address); `nil` picks the first powered one.
    public let adapter: String?
    /// Which devices to report.
    public let filter: Filter
    /// The bus bluetoothd is on: the system bus, or a test bus.
    public let bus: DBusConnection.Bus
    /// How long clean-up calls (`StopDiscovery`) may take.
    public let stopTimeout: Duration

    /// Creates a scanner.
    ///
    /// - Parameters:
    ///   - adapter: the adapter name (`hci0`) or address; `nil` picks the first powered adapter.
    ///   - filter: which devices to report.
    ///   - bus: where bluetoothd is; `.system` except in tests.
    ///   - stopTimeout: how long `StopDiscovery` may take when the stream ends.
    public init(
        adapter: String? = nil,
        filter: Filter = Filter(),
        bus: DBusConnection.Bus = .system,
        stopTimeout: Duration = .seconds(5)
    ) {
        self.adapter = adapter
        self.filter = filter
        self.bus = bus
        self.stopTimeout = stopTimeout
    }

    /// Starts discovery and returns what is heard, until the stream is dropped or cancelled.
    ///
    /// - Throws: ``TransportError`` (`.connectionFailed`) with a one-line cause and fix when
    ///   discovery cannot start: bluetoothd not running, no or unknown adapter, adapter off,
    ///   discovery refused.
    public func discoveries() async throws(TransportError) -> AsyncThrowingStream<Discovery, any Error> {
        try await BlueZSession.open(bus, handingTo: start(over:))
    }

    private func start(
        over session: BlueZSession
    ) async throws(TransportError) -> AsyncThrowingStream<
        Discovery, any Error
    > {
        let adapter = try BlueZAdapter.select(self.adapter, from: try await session.objectTree().adapters)
        let context = session.context("starting discovery on \(adapter.name)", connecting: true)
        // Subscribe first, so that nothing heard after StartDiscovery is missed.
        let added = try await session.signals(BlueZSignals.interfacesAdded, context)
        var changes = BlueZSignals.propertiesChanged(below: adapter.path)
        changes.arguments = [0: BlueZ.Interface.device]
        let changed = try await session.signals(changes, context)
        _ = try await session.call(
            adapter.path, BlueZ.Interface.adapter, "SetDiscoveryFilter", [.variantDictionary(filter.discoveryFilter)],
            context)
        let objects: BlueZObjectTree.ManagedObjects
        do {
            // From here on discovery may be running, even when the call is cut short: stop it.
            _ = try await session.call(
                adapter.path, BlueZ.Interface.adapter, "StartDiscovery", tolerating: ["org.bluez.Error.InProgress"],
                context)
            objects = try await session.managedObjects()
        } catch {
            await session.callDetached(adapter.path, BlueZ.Interface.adapter, "StopDiscovery", timeout: stopTimeout)
            throw error
        }

        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Discovery.self, throwing: (any Error).self)
        let pump = Task { [filter, stopTimeout] in
            var devices: [DBusObjectPath: [String: DBusValue]] = [:]
            for (path, interfaces) in objects.sorted(by: { $0.key < $1.key }) where adapter.path.isAncestor(of: path) {
                guard let properties = interfaces[BlueZ.Interface.device] else { continue }
                devices[path] = properties
                // Devices BlueZ knew count only when heard recently (RSSI is set only then).
                if let device = BlueZObjectTree.Device(path: path, properties: properties), device.rssi != nil,
                    filter.accepts(device)
                {
                    continuation.yield(Discovery(device: device, adapter: adapter.name))
                }
            }
            let (events, sink) = AsyncStream.makeStream(of: DBusMessage.self)
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await signal in added { sink.yield(signal) }
                    sink.finish()
                }
                group.addTask {
                    for await signal in changed { sink.yield(signal) }
                    sink.finish()
                }
                for await signal in events {
                    guard let device = Self.update(&devices, with: signal, below: adapter.path), filter.accepts(device)
                    else { continue }
                    continuation.yield(Discovery(device: device, adapter: adapter.name))
                }
                group.cancelAll()
            }
            if Task.isCancelled {
                await session.callDetached(adapter.path, BlueZ.Interface.adapter, "StopDiscovery", timeout: stopTimeout)
                continuation.finish()
            } else {
                continuation.finish(
                    throwing: TransportError(
                        .connectionFailed,
                        "discovery on \(adapter.name) ended: the D-Bus connection to bluetoothd was lost"))
            }
            await session.close()
        }
        continuation.onTermination = { _ in pump.cancel() }
        return stream
    }

    /// Applies a signal to the devices heard so far; returns the device it reports, if any.
    private static func update(
        _ devices: inout [DBusObjectPath: [String: DBusValue]],
        with signal: DBusMessage,
        below adapterPath: DBusObjectPath
    ) -> BlueZObjectTree.Device? {
        if signal.member == "InterfacesAdded" {
            guard let (path, interfaces) = BlueZSignals.added(signal), adapterPath.isAncestor(of: path),
                let properties = interfaces[BlueZ.Interface.device]
            else { return nil }
            // Already reported from the objects read at start.
            if devices[path] == properties { return nil }
            devices[path] = properties
            return BlueZObjectTree.Device(path: path, properties: properties)
        }
        guard let path = signal.path, let (interface, changed, invalidated) = BlueZSignals.changed(signal),
            interface == BlueZ.Interface.device
        else { return nil }
        var properties = devices[path] ?? [:]
        properties.merge(changed) { $1 }
        for name in invalidated { properties[name] = nil }
        devices[path] = properties
        // Only what an advertisement carries is news; connection changes are not.
        let advertised: Set<String> = ["RSSI", "Name", "Alias", "UUIDs", "ManufacturerData", "ServiceData", "TxPower"]
        guard !advertised.isDisjoint(with: changed.keys) else { return nil }
        if properties["Address"] == nil {
            // A device known before discovery started and not read since: its address is in its path.
            properties["Address"] = .string(Self.address(fromPath: path))
        }
        return BlueZObjectTree.Device(path: path, properties: properties)
    }

    /// `00:AA:01:01:00:01` from `/org/bluez/hci0/dev_00_AA_01_01_00_01`.
    static func address(fromPath path: DBusObjectPath) -> String {
        let last = path.rawValue.split(separator: "/").last ?? ""
        guard last.hasPrefix("dev_") else { return "" }
        return String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 })
    }
}
#endif
