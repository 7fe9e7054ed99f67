#if os(Linux)
import Foundation
import OTACore

/// The characteristics' methods, as `bluetoothd` calls them (BlueZ's `doc/gatt-api.txt`).
extension BlueZPeripheral {
    /// Answers a call to a characteristic object.
    func handle(_ call: DBusMessage, for characteristic: GATTApplication.Characteristic) async throws -> [DBusValue] {
        guard call.interface == GATTApplication.characteristicInterface else {
            throw DBusError(name: .unknownInterface, message: "\(characteristic.path) has no interface \(call.interface ?? "")")
        }
        switch call.member {
        case "WriteValue":
            let (bytes, options) = try call.decode([UInt8].self, [String: DBusValue].self)
            let kind = Self.writeKind(options: options, expectsReply: !call.noReplyExpected, properties: characteristic.properties)
            if kind == .withResponse { await barrier(before: characteristic.path) }
            let status = write(Data(bytes), to: characteristic, kind: kind, device: options["device"]?.objectPath)
            guard status == .success else { throw status.bluezError(onRead: false) }
            return []
        case "ReadValue":
            let options = try call.decode([String: DBusValue].self)
            await barrier(before: characteristic.path)
            if let device = options["device"]?.objectPath { linkUp(device) }
            let result = withModel { model.read(characteristic.id, peripheral: self) }
            switch result {
            case .success(let value):
                let offset = Int(options["offset"]?.uint16 ?? 0)
                guard offset <= value.count else {
                    throw DBusError(name: "org.bluez.Error.InvalidOffset", message: "offset \(offset) is past the \(value.count)-byte value")
                }
                return [.bytes(value.dropFirst(offset))]
            case .failure(let status):
                throw status.bluezError(onRead: true)
            }
        case "StartNotify":
            state.withLock { _ = $0.subscriptions.insert(characteristic.id) }
            return []
        case "StopNotify":
            state.withLock { _ = $0.subscriptions.remove(characteristic.id) }
            return []
        case "Confirm":
            // An indication was confirmed; the model does not ask.
            return []
        case Self.barrierMember where call.sender == bus.uniqueName:
            // Everything queued before this call was handled.
            return []
        default:
            throw DBusError(name: .unknownMethod, message: "\(characteristic.path) has no method \(call.member ?? "")")
        }
    }

    /// The kind of a write: the `type` option when BlueZ sends one (`command`, `request`,
    /// `reliable`), else the only write property of the characteristic, else whether `bluetoothd`
    /// waits for the reply. BlueZ 5.66's server sends no `type`, and sends every write to a
    /// characteristic that allows writes without response without waiting for the reply.
    static func writeKind(options: [String: DBusValue], expectsReply: Bool, properties: CharacteristicProperties) -> WriteKind {
        switch options["type"]?.string {
        case "command": return .withoutResponse
        case "request", "reliable": return .withResponse
        default: break
        }
        if !properties.contains(.writeWithoutResponse) { return .withResponse }
        if !properties.contains(.write) { return .withoutResponse }
        return expectsReply ? .withResponse : .withoutResponse
    }

    /// Gives a write to the model, unless an injected link drop is under way.
    private func write(_ value: Data, to characteristic: GATTApplication.Characteristic, kind: WriteKind, device: DBusObjectPath?) -> ATTStatus {
        if let device { linkUp(device) }
        var dying: DBusObjectPath?
        let (discard, startDrop): (Bool, DBusObjectPath?) = state.withLock { state in
            if state.dropping || (state.dying && kind == .withoutResponse) {
                state.statistics.discardedWrites += 1
                return (true, nil)
            }
            state.statistics.writes += 1
            guard kind == .withoutResponse else { return (false, nil) }
            state.statistics.dataBytes += value.count
            if let limit = configuration.dyingLinkAfterDataBytes, !state.died, state.statistics.dataBytes >= limit {
                state.died = true
                state.dying = true
                dying = state.central ?? device
            }
            if let limit = configuration.dropLinkAfterDataBytes, !state.dropped, state.statistics.dataBytes >= limit {
                state.dropped = true
                state.dropping = true
                return (false, state.central ?? device)
            }
            return (false, nil)
        }
        // What arrives once the link is being dropped never reached the device.
        guard !discard else { return kind == .withResponse ? .unlikelyError : .success }
        let status = withModel { model.write(value, to: characteristic.id, kind: kind, peripheral: self) }
        if let startDrop {
            let bytes = state.withLock { $0.statistics.dataBytes }
            configuration.log("dropping the link after \(bytes) data bytes (limit \(configuration.dropLinkAfterDataBytes ?? 0))")
            Task { await self.disconnect(startDrop, reason: "injected link drop") }
        }
        if let dying {
            let delay = configuration.dyingLinkDuration
            configuration.log("the data path dies after \(state.withLock { $0.statistics.dataBytes }) data bytes; the link drops in \(delay)")
            Task {
                try? await self.configuration.clock.sleep(for: delay)
                await self.disconnect(dying, reason: "injected dying link")
            }
        }
        return status
    }

    /// Waits until every characteristic object that takes writes without response, other than
    /// `path`, has handled the calls it had queued: each answers a call to itself only after
    /// those.
    ///
    /// `bluetoothd` sends calls in the order the central's PDUs arrived, but each object has its
    /// own queue; without this a write request could overtake the write commands before it (the
    /// data before a COMMIT). Only objects that take write commands are waited for: those are
    /// what piles up (`bluetoothd` does not wait for their replies), and they never wait
    /// themselves while handling a command, so two waits cannot wait for each other.
    func barrier(before path: DBusObjectPath? = nil) async {
        for other in application.characteristics where other.path != path && other.properties.contains(.writeWithoutResponse) {
            do {
                _ = try await bus.call(
                    .methodCall(
                        destination: bus.uniqueName, path: other.path, interface: GATTApplication.characteristicInterface,
                        member: Self.barrierMember),
                    timeout: .seconds(20))
            } catch {
                // Denied by the bus policy when not running as root (see barrierMember): say so
                // once rather than on every request.
                let first = state.withLock { state in
                    defer { state.barrierFailed = true }
                    return !state.barrierFailed
                }
                if first { configuration.log("order barrier on \(other.path) failed, requests may overtake writes: \(error)") }
            }
        }
    }
}
#endif
