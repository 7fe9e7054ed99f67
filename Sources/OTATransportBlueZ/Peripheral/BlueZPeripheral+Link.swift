#if os(Linux)
import Foundation
import OTACore

/// The link to the central: connections as BlueZ reports them, and the disconnects the
/// peripheral makes itself (reboots, injected link drops).
extension BlueZPeripheral {
    /// Follows `Device1` objects below the adapter in BlueZ's signals until the stream ends.
    ///
    /// - Throws: ``BlueZPeripheralError`` when the stream ends without the task being cancelled:
    ///   the bus connection was lost.
    func watchDevices(_ signals: AsyncStream<DBusMessage>) async throws {
        for await signal in signals {
            switch (signal.interface, signal.member) {
            case (Self.propertiesInterface, "PropertiesChanged"):
                guard let path = signal.path, isDevice(path), signal.arguments.count >= 2,
                    signal.arguments[0].string == Self.deviceInterface,
                    let connected = signal.arguments[1].variantDictionary?["Connected"]?.bool
                else { continue }
                if connected {
                    linkUp(path)
                } else {
                    // Writes that arrived before the link went down reach the model first.
                    await barrier()
                    linkDown(path, reason: "the central disconnected")
                }
            case (Self.objectManagerInterface, "InterfacesAdded"):
                guard signal.arguments.count >= 2, let path = signal.arguments[0].objectPath, isDevice(path),
                    let interfaces = try? [String: [String: DBusValue]](dbusValue: signal.arguments[1]),
                    interfaces[Self.deviceInterface]?["Connected"]?.bool == true
                else { continue }
                linkUp(path)
            case (Self.objectManagerInterface, "InterfacesRemoved"):
                guard signal.arguments.count >= 2, let path = signal.arguments[0].objectPath, isDevice(path),
                    signal.arguments[1].strings?.contains(Self.deviceInterface) == true
                else { continue }
                await barrier()
                linkDown(path, reason: "BlueZ removed the central's device object")
            default:
                continue
            }
        }
        if Task.isCancelled { return }
        throw BlueZPeripheralError("the connection to the D-Bus bus was lost")
    }

    /// Whether `path` is a device object of the adapter (`/org/bluez/hci1/dev_…`).
    private func isDevice(_ path: DBusObjectPath) -> Bool {
        adapterPath.isAncestor(of: path) && !path.rawValue.dropFirst(adapterPath.rawValue.count + 1).contains("/")
    }

    /// Takes a central that is already connected when the service starts.
    func adoptConnectedCentral() async {
        do {
            let objects = try await bus.call(
                .methodCall(destination: "org.bluez", path: .root, interface: Self.objectManagerInterface, member: "GetManagedObjects")
            ).decode([DBusObjectPath: [String: [String: DBusValue]]].self)
            for (path, interfaces) in objects.sorted(by: { $0.key < $1.key })
            where isDevice(path) && interfaces[Self.deviceInterface]?["Connected"]?.bool == true {
                linkUp(path)
            }
        } catch {
            configuration.log("cannot list BlueZ's objects: \(error)")
        }
    }

    /// A central is connected: tells the model, unless it knows already.
    func linkUp(_ device: DBusObjectPath) {
        let isNew: Bool = modelLock.withLock { _ in
            let isNew = state.withLock { state in
                guard state.central == nil else { return false }
                state.central = device
                state.statistics.connections += 1
                return true
            }
            if isNew { model.connected(self) }
            return isNew
        }
        if isNew { configuration.log("central connected: \(device)") }
    }

    /// The link to `device` is down: forgets its subscriptions and tells the model, unless it
    /// knows already.
    func linkDown(_ device: DBusObjectPath, reason: String) {
        let wasUp: Bool = modelLock.withLock { _ in
            let wasUp = state.withLock { state in
                guard state.central == device || state.central == nil else { return false }
                state.dropping = false
                state.dying = false
                guard state.central == device else { return false }
                state.central = nil
                state.subscriptions = []
                state.statistics.disconnections += 1
                return true
            }
            if wasUp { model.disconnected() }
            return wasUp
        }
        if wasUp { configuration.log("central disconnected (\(reason)): \(device)") }
    }

    /// Disconnects the connected central, if any, and waits until the link is down.
    public func disconnectCentral() async {
        await disconnect(state.withLock { $0.central }, reason: "requested")
    }

    /// Disconnects `device` with `Device1.Disconnect`, then reports the link down.
    func disconnect(_ device: DBusObjectPath?, reason: String) async {
        guard let device else {
            state.withLock { $0.dropping = false }
            return
        }
        state.withLock { $0.statistics.disconnectsRequested += 1 }
        configuration.log("disconnecting \(device) (\(reason))")
        do {
            _ = try await bus.call(
                .methodCall(destination: "org.bluez", path: device, interface: Self.deviceInterface, member: "Disconnect"),
                timeout: .seconds(30))
        } catch {
            configuration.log("Device1.Disconnect on \(device): \(error)")
        }
        await barrier()
        linkDown(device, reason: reason)
    }

    /// What ``reboot(after:)`` does once the delay is over: the link drops, then the model
    /// restarts.
    func performReboot() async {
        configuration.log("rebooting the device")
        await disconnect(state.withLock { $0.central }, reason: "device reboot")
        withModel { model.rebooted() }
        state.withLock { $0.statistics.reboots += 1 }
    }
}
#endif
