import Foundation
import OTACore

/// Switching a device from its application to its Secure DFU bootloader through the buttonless
/// characteristic, as a value-type state machine: set the name the bootloader will advertise,
/// then ask the application to restart. No I/O; ``NordicDFUClient`` performs the actions.
///
/// ```
/// start() ─▶ set name ──20 02 01──▶ enter bootloader ──20 01 01──▶ restarting(name)
///               │ 20 02 02 (SDK 12/13:        ▲  │ other
///               │ no such op code)            │  ▼
///               └─────────────────────────────┘ fail ──▶ restarting(nil) after 20 01 01
/// ```
///
/// The name is what tells this device's bootloader from any other in range
/// (``NordicDFUClient`` reconnects only to the one advertising it, at the device's address or
/// the next); an application whose buttonless service cannot set a name (the SDK 12/13 style)
/// restarts into a bootloader found by its address alone.
public struct ButtonlessEntryStateMachine: Sendable {
    /// What the driver must do next.
    public enum Action: Sendable, Equatable {
        /// Write the request to the buttonless characteristic with response, wait for its
        /// indication and pass it to ``received(_:)``.
        case send(ButtonlessRequest)
        /// The application accepted and restarts into its bootloader, which advertises as
        /// `advertisedName` (`nil`: the application could not set a name, and the bootloader
        /// advertises its own): the link drops.
        case restarting(advertisedName: String?)
        /// The switch failed.
        case fail(OTAError)

        /// Errors compare by code and message.
        public static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.send(let a), .send(let b)): a == b
            case (.restarting(let a), .restarting(let b)): a == b
            case (.fail(let a), .fail(let b)): a.code == b.code && a.message == b.message
            default: false
            }
        }
    }

    /// The name the bootloader will advertise.
    public let advertisingName: String
    private var awaiting: ButtonlessRequest?
    private var nameSet = true

    /// Prepares the switch; the bootloader will advertise as `advertisingName` (1…20 bytes).
    public init(advertisingName: String) {
        self.advertisingName = advertisingName
    }

    /// A name for one update, from `random`: "Dfu" and five hexadecimal digits (`Dfu3A9F1`), as
    /// Nordic's libraries pick one. Random per update, so that two devices updated at once (with
    /// the same image) never bring up bootloaders of the same name.
    public static func advertisingName(random: UInt64) -> String {
        "Dfu" + Hex.digits(UInt32(truncatingIfNeeded: random) & 0xF_FFFF, digits: 5)
    }

    /// Begins: set the advertising name.
    public mutating func start() -> Action {
        precondition(awaiting == nil, "start() called twice")
        let request = ButtonlessRequest.setAdvertisingName(advertisingName)
        awaiting = request
        return .send(request)
    }

    /// The application indicated `indication` on the buttonless characteristic.
    public mutating func received(_ indication: Data) -> Action {
        guard let request = awaiting else { preconditionFailure("received(_:) before start()") }
        let reply = [UInt8](indication)
        guard reply.count == 3, reply[0] == 0x20, reply[1] == request.opCode else {
            return .fail(OTAError(.malformedResponse, "malformed buttonless DFU response (\(reply.count) bytes)"))
        }
        if case .setAdvertisingName = request, reply[2] == 0x02 {
            // The SDK 12/13 buttonless service has no such op code: its bootloader advertises
            // its own name, at the next address.
            nameSet = false
            awaiting = .enterBootloader
            return .send(.enterBootloader)
        }
        guard reply[2] == 0x01 else {
            return .fail(OTAError(.deviceRejected, "the application refused to enter its bootloader: \(ButtonlessRequest.statusMeaning(reply[2]))"))
        }
        switch request {
        case .setAdvertisingName:
            awaiting = .enterBootloader
            return .send(.enterBootloader)
        case .enterBootloader:
            return .restarting(advertisedName: nameSet ? advertisingName : nil)
        }
    }
}
