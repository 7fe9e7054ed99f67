#if os(Linux)
import Foundation
import OTACore

/// An `org.bluez.Agent1`: what bluetoothd asks while pairing, answered from a passkey the user
/// gave (or none), for the devices of one adapter only.
///
/// BlueZ asks an agent to confirm or supply the secrets of Security Manager pairing: *Just Works*
/// needs an authorization (`RequestAuthorization`, or `RequestConfirmation` with the passkey
/// it would show), *Passkey Entry* a passkey typed on this side (`RequestPasskey`) or shown
/// (`DisplayPasskey`). With a passkey, or a person at a terminal to ask for the one the device
/// shows, the agent registers as `KeyboardOnly`, so that this side enters the device's six digits
/// (Passkey Entry, authenticated); otherwise as `NoInputNoOutput`, which only Just Works can
/// satisfy.
///
/// ``answer(_:arguments:)`` is the whole policy, pure and tested without a bus; ``register(on:)``
/// exports it and registers it with `AgentManager1`. One bluetoothd serves every adapter, and its
/// *default* agent is asked about pairings nobody started with `Device1.Pair`, so the agent
/// refuses devices of other adapters (the real-stack VM runs the central and the peripheral on one
/// bluetoothd).
public struct BlueZPairingAgent: Sendable, Hashable {
    /// What bluetoothd may ask.
    public enum Request: Sendable, Hashable {
        /// `RequestPasskey(device)`: the six digits to enter on this side.
        case passkey(device: DBusObjectPath)
        /// `RequestPinCode(device)`: a BR/EDR legacy PIN.
        case pinCode(device: DBusObjectPath)
        /// `RequestConfirmation(device, passkey)`: whether the passkey both sides show is the same
        /// (numeric comparison), or, for Just Works, whether to pair at all.
        case confirmation(device: DBusObjectPath, passkey: UInt32)
        /// `RequestAuthorization(device)`: whether to pair with a device that started it.
        case authorization(device: DBusObjectPath)
        /// `AuthorizeService(device, uuid)`.
        case service(device: DBusObjectPath, uuid: String)
        /// `DisplayPasskey(device, passkey, entered)` or `DisplayPinCode(device, pin)`: shown only.
        case display(device: DBusObjectPath, passkey: String)
        /// `Release()` or `Cancel()`.
        case cancel
    }

    /// The answer to a request.
    public enum Answer: Sendable, Hashable {
        /// Reply with nothing (accepted).
        case accept
        /// Reply with this passkey.
        case passkey(UInt32)
        /// Reply with this PIN.
        case pinCode(String)
        /// Ask the person for the passkey the device shows, and reply with it (as a PIN for
        /// `pin`).
        case askPerson(pin: Bool)
        /// Reply `org.bluez.Error.Rejected` with this reason.
        case reject(String)
    }

    /// The object path the agent is exported at.
    public var path: DBusObjectPath
    /// The adapter whose devices it answers for, such as `/org/bluez/hci0`.
    public var adapterPath: DBusObjectPath
    /// The passkey to enter (0…999 999); `nil` for Just Works only, or for one asked of the person.
    public var passkey: UInt32?
    /// Whether a person can be asked for the passkey the device shows (a terminal), when no
    /// ``passkey`` was given.
    public var asksPerson: Bool

    /// Creates an agent for the devices of `adapterPath`.
    public init(path: DBusObjectPath, adapterPath: DBusObjectPath, passkey: UInt32?, asksPerson: Bool = false) {
        self.path = path
        self.adapterPath = adapterPath
        self.passkey = passkey
        self.asksPerson = asksPerson
    }

    /// The IO capability it registers with: `KeyboardOnly` with a passkey or a person to ask, else
    /// `NoInputNoOutput`.
    public var capability: String { passkey == nil && !asksPerson ? "NoInputNoOutput" : "KeyboardOnly" }

    /// The passkey as the six digits a person types, such as `012345`.
    static func digits(_ passkey: UInt32) -> String {
        let text = String(passkey)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }

    /// How the agent answers `request`.
    public func answer(_ request: Request) -> Answer {
        switch request {
        case .cancel, .display:
            return .accept
        case .passkey(let device), .pinCode(let device), .confirmation(let device, _), .authorization(let device),
            .service(let device, _):
            guard adapterPath.isAncestor(of: device) else {
                return .reject("not a device of \(adapterPath) (this agent pairs only its own adapter's devices)")
            }
            switch request {
            case .passkey:
                if let passkey { return .passkey(passkey) }
                return asksPerson ? .askPerson(pin: false) : .reject("no passkey was given (--passkey)")
            case .pinCode:
                if let passkey { return .pinCode(Self.digits(passkey)) }
                return asksPerson ? .askPerson(pin: true) : .reject("no passkey was given (--passkey)")
            case .confirmation(_, let shown):
                // Just Works asks to confirm too; with a passkey given, only that one is accepted.
                if let passkey, passkey != shown {
                    return .reject("the devices show \(Self.digits(shown)), not the passkey given (\(Self.digits(passkey)))")
                }
                return .accept
            default:
                return .accept
            }
        }
    }

    /// Parses a call of `org.bluez.Agent1`; `nil` for an unknown member or malformed arguments.
    static func request(member: String, arguments: [DBusValue]) -> Request? {
        let device = arguments.first?.objectPath
        switch member {
        case "Release", "Cancel": return .cancel
        case "RequestPasskey": return device.map { .passkey(device: $0) }
        case "RequestPinCode": return device.map { .pinCode(device: $0) }
        case "RequestAuthorization": return device.map { .authorization(device: $0) }
        case "RequestConfirmation":
            guard let device, arguments.count > 1, let passkey = arguments[1].uint32 else { return nil }
            return .confirmation(device: device, passkey: passkey)
        case "AuthorizeService":
            guard let device, arguments.count > 1, let uuid = arguments[1].string else { return nil }
            return .service(device: device, uuid: uuid)
        case "DisplayPasskey":
            guard let device, arguments.count > 1, let passkey = arguments[1].uint32 else { return nil }
            return .display(device: device, passkey: digits(passkey))
        case "DisplayPinCode":
            guard let device, arguments.count > 1, let pin = arguments[1].string else { return nil }
            return .display(device: device, passkey: pin)
        default: return nil
        }
    }

    /// The D-Bus object that answers bluetoothd's calls; `log` hears each request and answer, and
    /// `askPerson` is asked the question for ``Answer/askPerson(pin:)``.
    func object(
        log: @escaping @Sendable (String) -> Void = { _ in }, askPerson: (@Sendable (String) async -> String?)? = nil
    ) -> DBusObject {
        let agent = self
        return DBusObject(path: path, interfaces: [BlueZ.Interface.agent: [:]]) { call in
            let member = call.member ?? ""
            guard let request = Self.request(member: member, arguments: call.arguments) else {
                throw DBusError(name: .unknownMethod, message: "no method \(call.interface ?? "").\(member)")
            }
            var answer = agent.answer(request)
            if case .askPerson(let pin) = answer {
                answer = await Self.asked(askPerson, device: call.arguments.first?.objectPath, pin: pin)
            }
            log("pairing agent: \(member) → \(answer)")
            switch answer {
            case .accept, .askPerson: return []
            case .passkey(let passkey): return [.uint32(passkey)]
            case .pinCode(let pin): return [.string(pin)]
            case .reject(let reason): throw DBusError(name: "org.bluez.Error.Rejected", message: reason)
            }
        }
    }

    /// The person's answer to "which passkey does the device show", as a reply: six digits, or a
    /// rejection naming what was wrong.
    static func asked(_ askPerson: (@Sendable (String) async -> String?)?, device: DBusObjectPath?, pin: Bool) async -> Answer {
        guard let askPerson else { return .reject("no passkey was given (--passkey)") }
        let address = device.map(BlueZScanner.address(fromPath:)) ?? ""
        let name = address.isEmpty ? "the device" : address
        guard let text = await askPerson("passkey shown by \(name) (six digits): ") else {
            return .reject("no passkey was entered")
        }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let passkey = LinkPairing.passkey(trimmed) else { return .reject("'\(trimmed)' is not six digits") }
        return pin ? .pinCode(trimmed) : .passkey(passkey)
    }

    /// Exports the agent on `connection` and registers it with `AgentManager1.RegisterAgent`;
    /// with `asDefault`, also `RequestDefaultAgent`, so that bluetoothd asks it about pairings a
    /// device starts. Closing the connection unregisters it (bluetoothd watches its owner).
    func register(
        on connection: DBusConnection, asDefault: Bool, log: @escaping @Sendable (String) -> Void = { _ in },
        askPerson: (@Sendable (String) async -> String?)? = nil
    ) async throws {
        try await connection.export(object(log: log, askPerson: askPerson))
        _ = try await connection.call(
            .methodCall(
                destination: BlueZ.serviceName, path: BlueZ.agentManagerPath, interface: BlueZ.Interface.agentManager,
                member: "RegisterAgent", arguments: [.objectPath(path), .string(capability)]))
        if asDefault {
            _ = try await connection.call(
                .methodCall(
                    destination: BlueZ.serviceName, path: BlueZ.agentManagerPath, interface: BlueZ.Interface.agentManager,
                    member: "RequestDefaultAgent", arguments: [.objectPath(path)]))
        }
    }
}
#endif
