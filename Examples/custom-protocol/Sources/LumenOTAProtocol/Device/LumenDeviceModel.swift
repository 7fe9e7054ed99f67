import Foundation
import OTACore
import Synchronization

/// The bulb side of Lumen, for the simulator: appends data in order, checks size and CRC-32 of
/// what flash holds at the end. It speaks the same codecs as the client (``LumenCommand``,
/// ``LumenReply``).
public final class LumenDeviceModel: DeviceModel {
    private struct State {
        var expected = 0
        var received = 0
        var erasedUpTo = 0
        var active = false
    }

    private let state = Mutex(State())

    /// Creates a bulb with no update in progress.
    public init() {}

    public var services: [GATTServiceDefinition] {
        [
            GATTServiceDefinition(
                uuid: LumenProtocol.service,
                characteristics: [.init(uuid: LumenProtocol.characteristic.characteristic, properties: [.write, .notify])]
            )
        ]
    }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        guard characteristic == LumenProtocol.characteristic, kind == .withResponse else { return .writeNotPermitted }
        guard let command = LumenCommand(decoding: value) else { return .invalidPDU }
        let flash = peripheral.flash
        let reply: LumenReply? = state.withLock { state in
            switch command {
            case .begin(let size):
                guard Int(size) <= flash.capacity else { return LumenReply(.begin, .tooLarge) }
                state = State(expected: Int(size), received: 0, erasedUpTo: 0, active: true)
                return LumenReply(.begin, .ok)
            case .data(let payload):
                guard state.active, state.received + payload.count <= state.expected else { return nil }
                do {
                    while state.erasedUpTo < state.received + payload.count {
                        try flash.erase(state.erasedUpTo..<(state.erasedUpTo + flash.sectorSize))
                        state.erasedUpTo += flash.sectorSize
                    }
                    try flash.write(payload, at: state.received)
                    state.received += payload.count
                } catch {
                    state.active = false
                }
                return nil
            case .end(let crc):
                defer { state.active = false }
                guard state.received == state.expected else { return LumenReply(.end, .badSize) }
                let status: LumenStatus = CRC32.checksum(flash.read(0..<state.expected)) == crc ? .ok : .badCRC
                return LumenReply(.end, status)
            }
        }
        if let reply { peripheral.notify(reply.encoded, on: LumenProtocol.characteristic) }
        return .success
    }
}
